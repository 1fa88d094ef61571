/**
 * The warehouse MCP server on the order desk's HTTP server: a real warehouse process over stdio
 * (the SDK's `McpServer`), a real HTTP server, both frameworks on their demo models. Its read-only
 * tool runs as a `read` (no approval), its destructive tool waits for approval and runs once with
 * the session's idempotency key in `_meta`, a refusal (`isError`) is `failed`, and after the
 * warehouse process is SIGKILLed the next call starts it again.
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { SessionSnapshot, ToolCallRecord } from "@durable-agents/core";
import type { McpToolset } from "@durable-agents/mcp";
import { afterEach, describe, expect, it } from "vitest";
import { connectWarehouse, warehouseReleases } from "../src/warehouse.js";
import { startHarness, type Harness } from "./support/order-support-harness.js";

const cleanups: (() => Promise<void> | void)[] = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

const callOf = (snapshot: SessionSnapshot, name: string): ToolCallRecord => {
  const call = snapshot.turn?.calls.find((c) => c.name === name);
  expect(call, `a ${name} call`).toBeDefined();
  return call!;
};

async function send(harness: Harness, id: string, token: string, text: string, turn: number): Promise<SessionSnapshot> {
  const sent = await harness.request("POST", `/sessions/${id}/messages`, { token, body: { text } });
  expect(sent.status).toBe(202);
  return harness.waitFor(id, token, (s) => s.turnCount === turn && s.status !== "running");
}

async function approveAll(harness: Harness, id: string, token: string, snapshot: SessionSnapshot, turn: number) {
  expect(snapshot.status).toBe("awaiting_approval");
  for (const interrupt of snapshot.pendingInterrupts) {
    const approved = await harness.request("POST", `/sessions/${id}/interrupts/${interrupt.interruptId}/approve`, {
      token,
    });
    expect(approved.status).toBe(202);
  }
  return harness.waitFor(id, token, (s) => s.turnCount === turn && s.status === "idle");
}

describe.each(["openai-agents", "ai-sdk"] as const)("the warehouse MCP server on %s", (framework) => {
  it("checks a parcel without approval, releases stock once after approval, and survives a SIGKILLed warehouse", async () => {
    const dir = mkdtempSync(join(tmpdir(), "order-support-warehouse-"));
    cleanups.push(() => rmSync(dir, { recursive: true, force: true }));
    const stateFile = join(dir, "warehouse.json");
    const warehouse: McpToolset = await connectWarehouse({ stateFile });
    cleanups.push(() => warehouse.close());
    const harness = await startHarness({ framework, warehouse });
    cleanups.push(() => harness.close());

    // The effects come from the warehouse's own annotations: no policy names its tools.
    expect(
      harness.runtime.definition.tools.filter((t) => t.defaultEffect).map((t) => [t.name, t.defaultEffect]),
    ).toEqual([
      ["check_parcel", "read"],
      ["release_stock", "unclassified"],
    ]);

    const { id, token } = await harness.startSession("where is the parcel of order 1002?");
    const checked = await harness.waitFor(id, token, (s) => s.turnCount === 1 && s.status === "idle");
    expect(callOf(checked, "check_parcel")).toMatchObject({ effect: "read", status: "succeeded", attempts: 1 });
    expect(checked.messages.at(-1)?.text).toBe(
      "I asked the warehouse about order 1002: The parcel of order 1002 is not packed yet: 1 x 27-inch monitor (MN-27) is reserved on shelf B-7.",
    );

    const waiting = await send(harness, id, token, "release the stock of order 1002", 2);
    expect(waiting.pendingInterrupts.map((i) => i.toolName)).toEqual(["release_stock"]);
    expect(warehouseReleases(stateFile)).toEqual([]);
    const released = await approveAll(harness, id, token, waiting, 2);
    const release = callOf(released, "release_stock");
    expect(release).toMatchObject({ effect: "unclassified", status: "succeeded", attempts: 1 });
    expect(warehouseReleases(stateFile)).toEqual([
      { orderId: "1002", key: `${id}/turn-2/${release.toolCallId}`, text: release.output, at: expect.any(String) },
    ]);

    // The warehouse process dies; the next call starts it again, and it remembers the release.
    const pid = warehouse.serverProcessId("warehouse");
    expect(pid).toBeGreaterThan(0);
    process.kill(pid!, "SIGKILL");
    const again = await send(harness, id, token, "where is the parcel of order 1002?", 3);
    expect(callOf(again, "check_parcel")).toMatchObject({ status: "succeeded" });
    expect(again.messages.at(-1)?.text).toContain("was unpacked: its stock is back on the shelf");
    expect(warehouse.serverProcessId("warehouse")).not.toBe(pid);

    // A second release is refused by the warehouse (isError): failed, not retried, and the model says why.
    const twice = await approveAll(
      harness,
      id,
      token,
      await send(harness, id, token, "release the stock of order 1002", 4),
      4,
    );
    expect(callOf(twice, "release_stock")).toMatchObject({ status: "failed", attempts: 1 });
    expect(twice.messages.at(-1)?.text).toBe(
      "I asked the warehouse to release the stock of order 1002: The tool call failed: the stock of order 1002 was released already",
    );
    expect(warehouseReleases(stateFile)).toHaveLength(1);
  });
});
