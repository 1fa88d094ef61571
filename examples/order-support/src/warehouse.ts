/**
 * The warehouse MCP server (`warehouse-server.ts`), attached to the order desk's agent: a trusted
 * server the application starts itself over stdio. Its tools get their effects from their own
 * annotations (`check_parcel` read-only: `read`; `release_stock` destructive: `unclassified`, so it
 * waits for approval), as `@durable-agents/mcp` maps them.
 */
import { existsSync, readFileSync } from "node:fs";
import { fileURLToPath } from "node:url";
import { McpToolset, type McpStdioServer } from "@durable-agents/mcp";

/** The server script: the source when this module runs from source (Node strips its types), else the build. */
export const warehouseServerScript: string = fileURLToPath(
  new URL(import.meta.url.endsWith(".ts") ? "./warehouse-server.ts" : "./warehouse-server.js", import.meta.url),
);

export interface WarehouseOptions {
  /** Keeps the warehouse's releases in this JSON file (they survive the process). Default: in the server's memory. */
  readonly stateFile?: string;
}

/** How the toolset starts the warehouse. */
export function warehouseServer(options: WarehouseOptions = {}): McpStdioServer {
  return {
    name: "warehouse",
    command: process.execPath,
    args: ["--no-warnings", warehouseServerScript],
    ...(options.stateFile ? { env: { WAREHOUSE_STATE: options.stateFile } } : {}),
    stderr: "inherit",
  };
}

/** Starts the warehouse and reads its tools; fails with `McpConnectionError` when it does not answer. */
export function connectWarehouse(options: WarehouseOptions = {}): Promise<McpToolset> {
  return McpToolset.connect([warehouseServer(options)]);
}

/** One release the warehouse recorded in its state file. */
export interface WarehouseRelease {
  readonly orderId: string;
  readonly key: string | null;
  readonly text: string;
  readonly at: string;
}

/** The releases recorded in a warehouse state file (none when it does not exist). */
export function warehouseReleases(stateFile: string): WarehouseRelease[] {
  if (!existsSync(stateFile)) return [];
  return (JSON.parse(readFileSync(stateFile, "utf8")) as { releases: WarehouseRelease[] }).releases;
}
