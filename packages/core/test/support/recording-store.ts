import { MemoryStore } from "../../src/testing/index.js";
import type { Commit } from "../../src/engine.js";

/** A memory store that keeps every commit it applied, in order. */
export class RecordingStore extends MemoryStore {
  readonly applied: Commit[] = [];
  override async commit(...args: Parameters<MemoryStore["commit"]>) {
    const result = await super.commit(...args);
    this.applied.push(args[0]);
    return result;
  }
}
