import { ensureBuilt } from "./ensure-built.js";

export default function setup(): void {
  ensureBuilt();
}
