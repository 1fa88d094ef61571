/**
 * The warehouse: an MCP server (the SDK's `McpServer`, over stdio) that the order desk's agent gets
 * two tools from. The example starts it as a child process (`warehouse.ts`); it stands for a
 * system another team runs, which describes its tools itself:
 *
 * - `check_parcel` (`readOnlyHint: true`): where an order's parcel is. A `read` by its hints: a
 *   `CallTool` step, retried, no approval.
 * - `release_stock` (`destructiveHint: true`): puts the stock reserved for an order back on the
 *   shelf and deletes its picking list. `unclassified` by its hints: a single-attempt step that
 *   waits for a person's approval.
 *
 * `release_stock` remembers the idempotency key the session sends in `_meta`
 * (`durable-agents/idempotencyKey`): the same key again gets the first answer and releases nothing
 * more. With `WAREHOUSE_STATE` (a file) its releases survive the process; without it they are kept
 * in memory. The warehouse refuses what it cannot do with an `isError` result (the call is
 * `failed`, not retried, and the model reads why).
 *
 * Self-contained (no relative imports, only erasable TypeScript), so Node runs the source as is.
 */
import { existsSync, readFileSync, renameSync, writeFileSync } from "node:fs";
import { McpServer } from "@modelcontextprotocol/sdk/server/mcp.js";
import { StdioServerTransport } from "@modelcontextprotocol/sdk/server/stdio.js";
import { readDurableMeta } from "@durable-agents/mcp";
import { z } from "zod";

interface Release {
  readonly orderId: string;
  /** The idempotency key of the durable call that released it, when it came from a session. */
  readonly key: string | null;
  readonly text: string;
  readonly at: string;
}

interface WarehouseState {
  releases: Release[];
}

const parcels: Record<string, { readonly where: string; readonly reserved: string | null }> = {
  "1001": { where: "left the warehouse on its way to Ada, tracking number TRK-1001-7Q", reserved: null },
  "1002": {
    where: "is not packed yet: 1 x 27-inch monitor (MN-27) is reserved on shelf B-7",
    reserved: "1 x 27-inch monitor (MN-27)",
  },
};

const statePath = process.env.WAREHOUSE_STATE ?? "";
let state: WarehouseState = { releases: [] };
/** The state as stored (another process may share the file); in memory without a file. */
const load = (): WarehouseState =>
  statePath && existsSync(statePath) ? (JSON.parse(readFileSync(statePath, "utf8")) as WarehouseState) : state;
state = load();
const save = () => {
  if (!statePath) return;
  const next = `${statePath}.${process.pid}.tmp`;
  writeFileSync(next, JSON.stringify(state, null, 2));
  renameSync(next, statePath);
};

const text = (value: string) => ({ content: [{ type: "text" as const, text: value }] });
const refusal = (value: string) => ({ ...text(value), isError: true });

const server = new McpServer({ name: "order-desk-warehouse", version: "1.0.0" });

server.registerTool(
  "check_parcel",
  {
    title: "Check a parcel",
    description: "Where the parcel of one order is: in the warehouse, or on its way.",
    inputSchema: { order_id: z.string().describe("The order ID, such as 1001") },
    annotations: { readOnlyHint: true, openWorldHint: false },
  },
  async ({ order_id }) => {
    state = load();
    const parcel = parcels[order_id];
    if (!parcel) return refusal(`the warehouse has no parcel for order ${order_id}`);
    const released = state.releases.find((r) => r.orderId === order_id);
    if (released) return text(`The parcel of order ${order_id} was unpacked: its stock is back on the shelf.`);
    return text(`The parcel of order ${order_id} ${parcel.where}.`);
  },
);

server.registerTool(
  "release_stock",
  {
    title: "Release reserved stock",
    description:
      "Put the stock reserved for an order that is not packed yet back on the shelf; its picking list is deleted.",
    inputSchema: { order_id: z.string().describe("The order ID, such as 1002") },
    annotations: { readOnlyHint: false, destructiveHint: true, idempotentHint: false, openWorldHint: false },
  },
  async ({ order_id }, extra) => {
    state = load();
    const key = readDurableMeta(extra._meta)?.idempotencyKey ?? null;
    // The same durable call again (same key): its first answer, and nothing released twice.
    const earlier = key === null ? undefined : state.releases.find((r) => r.key === key);
    if (earlier) return text(earlier.text);
    const parcel = parcels[order_id];
    if (!parcel) return refusal(`the warehouse has no parcel for order ${order_id}`);
    if (parcel.reserved === null) return refusal(`the parcel of order ${order_id} has left the warehouse`);
    if (state.releases.some((r) => r.orderId === order_id))
      return refusal(`the stock of order ${order_id} was released already`);
    const answer = `Released the stock of order ${order_id}: ${parcel.reserved} is back on shelf B-7.`;
    state.releases.push({ orderId: order_id, key, text: answer, at: new Date().toISOString() });
    save();
    return text(answer);
  },
);

await server.connect(new StdioServerTransport());
// The application that started it decides when it ends (it closes stdin): a Ctrl-C at the terminal
// reaches the whole process group, and must not take the warehouse away from a demo that goes on.
process.on("SIGINT", () => {});
process.stdin.on("close", () => process.exit(0));
