/**
 * The event stream's lifecycle: a dropped connection stops the server's follower of the store, and
 * an idle stream sends keep-alive comments.
 */
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import type { OrderSupportClient } from "../src/session-client-port.js";
import { startHarness, type Harness } from "./support/order-support-harness.js";
import { SseConnection } from "./support/sse-reader.js";

/** Counts the followers the server has open on the real client (per test: see beforeEach). */
function observeFollowers(followers: { active: number }) {
  return (client: OrderSupportClient): OrderSupportClient => ({
    startSession: (input) => client.startSession(input),
    sendMessage: (id, text, options) => client.sendMessage(id, text, options),
    cancelTurn: (id, options) => client.cancelTurn(id, options),
    steer: (id, text, options) => client.steer(id, text, options),
    resolveInterrupt: (id, input) => client.resolveInterrupt(id, input),
    resolveAttention: (id, interruptId, resolution) => client.resolveAttention(id, interruptId, resolution),
    snapshot: (id) => client.snapshot(id),
    readEvents: (id, options) => client.readEvents(id, options),
    async *followEvents(id, options) {
      followers.active += 1;
      try {
        yield* client.followEvents(id, options);
      } finally {
        followers.active -= 1;
      }
    },
  });
}

// Each test gets a server of its own and a follower count that starts at zero.
let harness: Harness;
let followers: { active: number };
beforeEach(async () => {
  followers = { active: 0 };
  harness = await startHarness({ keepAliveMs: 50, serverClient: observeFollowers(followers) });
});
afterEach(async () => {
  await harness?.close();
});

async function eventually(check: () => boolean, timeoutMs = 5_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!check()) {
    if (Date.now() > deadline) throw new Error("the condition did not hold in time");
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
}

describe("the SSE event stream", () => {
  it("stops following the store when the client goes away", async () => {
    const { id, token } = await harness.startSession("look up order 1001");
    await harness.waitFor(id, token, (s) => s.status === "idle" && s.messages.at(-1)?.role === "assistant");
    const streams = await Promise.all(
      [0, 1, 2].map(() => SseConnection.open(`${harness.url}/sessions/${id}/events`, { "x-session-token": token })),
    );
    for (const stream of streams)
      expect(JSON.parse((await stream.next())!.data)).toMatchObject({ seq: 1, type: "session_created" });
    await eventually(() => followers.active === 3);
    for (const stream of streams) stream.close();
    await eventually(() => followers.active === 0);
  });

  it("sends keep-alive comments while nothing happens, and still delivers the next event", async () => {
    const { id, token } = await harness.startSession();
    await harness.waitFor(id, token, (s) => s.lastEventSeq >= 1);
    const response = await fetch(`${harness.url}/sessions/${id}/events?after=1`, {
      headers: { "x-session-token": token },
    });
    const reader = response.body!.getReader();
    const decoder = new TextDecoder();
    let text = "";
    while ((text.match(/: keep-alive\n\n/g) ?? []).length < 2)
      text += decoder.decode((await reader.read()).value, { stream: true });
    expect(text).not.toContain("data:");
    await harness.request("POST", `/sessions/${id}/messages`, { token, body: { text: "hello" } });
    while (!text.includes("event: turn_started")) text += decoder.decode((await reader.read()).value, { stream: true });
    // The first worker that drives the session pins it to its definition in the same commit (core's pinning).
    expect(text).toMatch(/id: 2\nevent: (definition_pinned|message_queued|turn_started)/);
    await reader.cancel();
  });
});
