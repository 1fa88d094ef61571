/**
 * How inbox entries reach a running drive: as the named signal `inbox:<seq>`, sent by the inbox
 * object. A signal that comes without the entry it names (sent by someone else) is ignored: the
 * drive waits for that entry's signal again, and the entry, when it comes, is applied in the
 * running turn as any other.
 */
import assert from "node:assert/strict";
import http2 from "node:http2";
import { defineSession, SessionClient } from "@durable-agents/core";
import { ScriptedRunner } from "@durable-agents/core/testing";
import * as restate from "@restatedev/restate-sdk";
import { afterAll, beforeAll, describe, it } from "vitest";
import {
  freePort,
  queryRestate,
  quietLogger,
  RestateTestEnv,
  registerDeployment,
  restateFromEnv,
} from "../src/testing/index.js";

let env: RestateTestEnv;
let client: SessionClient;
let release: () => void = () => {};
const gate = () =>
  new Promise<string>((resolve) => {
    release = () => resolve("done");
  });

/** Sends a named signal with any payload to an invocation (what the inbox object does, wrongly). */
const stray = restate.service({
  name: `strayed${process.pid}`,
  handlers: {
    send: async (ctx: restate.Context, req: { id: string; name: string }) => {
      ctx.invocation(restate.InvocationIdParser.fromString(req.id)).signal(req.name).resolve({ entries: [] });
    },
  },
});
const strayServer = http2.createServer();

beforeAll(async () => {
  env = await new RestateTestEnv({ ...restateFromEnv(), engineOptions: { journalRetention: { minutes: 10 } } }).start();
  const runner = new ScriptedRunner({
    tools: [{ name: "slow", description: "Waits.", parameters: {}, execute: () => gate() }],
  });
  const definition = defineSession({ name: "signals", runner, policies: { slow: { effect: "read" } } });
  env.worker({ store: env.store, definition, pollIntervalMs: 25, leaseTtlMs: 5_000, concurrency: 16 }).start();
  client = new SessionClient({ store: env.store });
  strayServer.on("request", restate.createEndpointHandler({ services: [stray], logger: quietLogger }));
  const port = await freePort();
  await new Promise<void>((resolve) => strayServer.listen(port, "127.0.0.1", resolve));
  await registerDeployment(restateFromEnv().adminUrl, `http://127.0.0.1:${port}`);
}, 60_000);

afterAll(async () => {
  release();
  await env?.close();
  await new Promise<void>((resolve) => strayServer.close(() => resolve()));
});

describe("inbox signals", () => {
  it("a signal without its entry is ignored: the entry, sent after it, still reaches the running turn", async () => {
    const { sessionId } = await client.startSession({ agent: "signals", message: "call slow {}" });
    await client.waitFor(sessionId, (s) => s.status === "running");
    const [drive] = await queryRestate<{ id: string }>(
      restateFromEnv().adminUrl,
      `SELECT id FROM sys_invocation WHERE target_service_name = '${env.names.session}' AND target_handler_name = 'drive'
       AND target_service_key = '${sessionId}' AND status != 'completed' ORDER BY created_at LIMIT 1`,
    );
    assert.ok(drive, "the drive runs");
    // The entry after the first message would be seq 2: its signal comes, without the entry.
    await env.store.ingress.callService(`strayed${process.pid}`, "send", { id: drive.id, name: "inbox:2" });
    await new Promise((resolve) => setTimeout(resolve, 200));
    await client.sendMessage(sessionId, "and then this");
    release();
    const idle = await client.waitFor(sessionId, (s) => s.status === "idle" && s.turnCount === 2, {
      timeoutMs: 30_000,
    });
    assert.equal(idle.turnCount, 2, "the message sent after the stray signal ran its turn");
    const texts = idle.messages.filter((m) => m.role === "user").map((m) => m.text);
    assert.deepEqual(texts.slice(-2), ["call slow {}", "and then this"]);
    // The drive received both: the stray signal, and the entry's own after it.
    const [signals] = await queryRestate<{ n: number }>(
      restateFromEnv().adminUrl,
      `SELECT count(*) AS n FROM sys_journal WHERE id = '${drive.id}' AND entry_type = 'Notification: Signal'`,
    );
    assert.equal(Number(signals!.n), 2, "two signals reached the drive");
    // Applied while the first turn ran (queued behind it), not after it by the drive sent for it.
    const events = await env.store.readEvents(sessionId, 0, 1000);
    const queued = events.findIndex((e) => e.type === "message_queued");
    const firstEnd = events.findIndex((e) => e.type === "turn_completed");
    assert.ok(
      queued !== -1 && queued < firstEnd,
      `message_queued (${queued}) before the first turn's end (${firstEnd})`,
    );
  }, 60_000);
});
