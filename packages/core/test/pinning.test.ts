/**
 * Pinning a session to its agent definition: the fingerprint, the pin's transitions, and the worker's
 * rules (which definition drives which session, a migration that breaks its contract). The rolling
 * deploy with real worker processes is in tests/crash; every runner × store pair runs the pinning
 * scenarios of core's session suite.
 */
import { describe, expect, it } from "vitest";
import {
  ConfigurationError,
  defineSession,
  describeChanges,
  fingerprintPattern,
  MigrationError,
  parseSessionHead,
  SessionClient,
  UnknownAgentError,
  Worker,
  type SessionDefinition,
  type SessionHead,
} from "../src/index.js";
import {
  applyDefinition,
  canonicalJson,
  checkMigratedHead,
  describeDefinition,
  fingerprintOf,
  newSessionHead,
} from "../src/engine.js";
import { MemoryStore, memoryRawReader, ScriptedRunner } from "../src/testing/index.js";
import type { ConformanceTool } from "../src/testing/index.js";

const lookUp = (parameters: ConformanceTool["parameters"] = { order_id: "string" }): ConformanceTool => ({
  name: "look_up_order",
  description: "Look up an order.",
  parameters,
  execute: (args) => `order ${String(args.order_id)}`,
});
const cancel: ConformanceTool = {
  name: "cancel_order",
  description: "Cancel an order.",
  parameters: { order_id: "string" },
  execute: (args) => `cancelled ${String(args.order_id)}`,
};

const define = (tools: ConformanceTool[], extra: Partial<Parameters<typeof defineSession>[0]> = {}) =>
  defineSession({
    name: "support",
    runner: new ScriptedRunner({ tools }),
    policies: { look_up_order: { effect: "read" } },
    ...extra,
  });

const until = async (what: string, check: () => boolean | Promise<boolean>) => {
  const deadline = Date.now() + 5_000;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
};

describe("a definition's fingerprint", () => {
  it("is the same for the same definition and changes with every described part", () => {
    const base = define([lookUp(), cancel]);
    expect(base.fingerprint).toMatch(fingerprintPattern);
    expect(define([lookUp(), cancel]).fingerprint).toBe(base.fingerprint);
    // Tool order does not matter to core's part; the runner lists its tools as it has them.
    expect(define([lookUp(), cancel], { modelRetry: { maxAttempts: 5 } }).fingerprint).toBe(base.fingerprint);
    const others = [
      define([lookUp({ order_id: "number" }), cancel]), // an argument schema
      define([lookUp()]), // a tool less
      define([lookUp(), cancel], { policies: { look_up_order: { effect: "idempotent_write" } } }), // an effect
      define([lookUp(), cancel], { policies: { look_up_order: { effect: "read", needsApproval: true } } }), // approval
      define([lookUp(), { ...cancel, needsApproval: true }]), // the framework's approval
      defineSession({ name: "billing", runner: new ScriptedRunner({ tools: [lookUp(), cancel] }), policies: {} }),
    ].map((d) => d.fingerprint);
    expect(new Set([base.fingerprint, ...others]).size).toBe(others.length + 1);
  });

  it("is the hash of the canonical description, which names what changed", () => {
    const a = define([lookUp(), cancel]);
    const b = define([lookUp({ order_id: "number" }), cancel], {
      policies: { look_up_order: { effect: "read" }, cancel_order: { effect: "non_idempotent_write" } },
    });
    expect(fingerprintOf(a.description)).toBe(a.fingerprint);
    expect(a.description.runner?.adapter.name).toBe("@durable-agents/core/testing#ScriptedRunner");
    expect(a.description.tools.map((t) => [t.name, t.effect, t.approval])).toEqual([
      ["cancel_order", "unclassified", { framework: "never", policy: true }],
      ["look_up_order", "read", { framework: "never", policy: false }],
    ]);
    expect(describeChanges(a.description, b.description)).toEqual([
      {
        path: 'runner.agents["scripted"].tools["look_up_order"].parameters.order_id',
        before: "string",
        after: "number",
      },
      { path: 'tools["cancel_order"].effect', before: "unclassified", after: "non_idempotent_write" },
    ]);
    expect(describeChanges(a.description, a.description)).toEqual([]);
  });

  it("canonical JSON sorts keys, drops undefined and refuses what JSON cannot hold", () => {
    expect(canonicalJson({ b: 1, a: [true, null, undefined], c: undefined, d: { z: "x", y: 2 } })).toBe(
      '{"a":[true,null,null],"b":1,"d":{"y":2,"z":"x"}}',
    );
    expect(() => canonicalJson({ f: () => 1 })).toThrow(/the description\.f is a function/);
    expect(() => canonicalJson({ n: Number.NaN })).toThrow(ConfigurationError);
    const cycle: Record<string, unknown> = {};
    cycle.self = cycle;
    expect(() => canonicalJson(cycle)).toThrow(/cycle/);
    const runner = new ScriptedRunner({ tools: [lookUp()] });
    const bad = Object.assign(runner, {
      describe: () => ({ adapter: { name: "x", version: "1" }, agents: [], extra: 10n }),
    });
    expect(() => defineSession({ name: "x", runner: bad })).toThrow(/extra is a bigint/);
    // A runner without describe(): core's part only.
    const plain = describeDefinition("p", [{ name: "t", approval: "never" }], {}, null);
    expect(plain.runner).toBeNull();
    expect(fingerprintOf(plain)).toMatch(fingerprintPattern);
  });

  it("refuses malformed migrations at defineSession", () => {
    const own = define([lookUp()]);
    const other = define([lookUp(), cancel]).fingerprint;
    const refused = (migrations: unknown) => () => define([lookUp()], { migrations: migrations as never });
    expect(refused("x")).toThrow(ConfigurationError);
    expect(refused([{ from: "nope", accept: true }])).toThrow(/must be a definition fingerprint/);
    expect(refused([{ from: own.fingerprint, accept: true }])).toThrow(/own fingerprint/);
    expect(refused([{ from: other }])).toThrow(/exactly one of accept/);
    expect(refused([{ from: other, accept: true, transform: () => undefined }])).toThrow(/exactly one of accept/);
    expect(refused([{ from: other, accept: false }])).toThrow(/exactly one of accept/);
    expect(
      refused([
        { from: other, accept: true },
        { from: other, transform: () => undefined },
      ]),
    ).toThrow(/two migrations are from/);
    expect(define([lookUp()], { migrations: [{ from: other, accept: true }] }).migrations).toEqual([
      { from: other, accept: true },
    ]);
  });
});

describe("the pin's transitions (applyDefinition)", () => {
  const head = (): SessionHead => newSessionHead("s", "support", "2025-01-01T00:00:00.000Z");
  const pinned = (fingerprint: string): SessionHead => ({ ...head(), definition: { fingerprint, waiting: null } });

  it("pins an unpinned session, ignores another definition, and ends a wait on its own", () => {
    const t = applyDefinition(head(), { type: "pin", fingerprint: "fp-a", description: { d: 1 } }, 5);
    expect(t.head.definition).toEqual({ fingerprint: "fp-a", waiting: null });
    expect(t.events).toEqual([
      { type: "definition_pinned", data: { fingerprint: "fp-a", by: "worker", description: { d: 1 } } },
    ]);
    const again = applyDefinition(t.head, { type: "pin", fingerprint: "fp-a", description: {} }, 6);
    expect(again.changed).toBe(false);
    expect(again.ignored).toBeNull();
    const other = applyDefinition(t.head, { type: "pin", fingerprint: "fp-b", description: {} }, 6);
    expect(other.changed).toBe(false);
    expect(other.ignored).toMatch(/pinned to fp-a, not fp-b/);
    const waiting = applyDefinition(t.head, { type: "wait", reason: "unserved" }, 7);
    expect(waiting.head.status).toBe("waiting_for_definition");
    expect(waiting.head.definition?.waiting).toEqual({ reason: "unserved", since: 7, error: null });
    expect(applyDefinition(waiting.head, { type: "wait", reason: "unserved" }, 8).changed).toBe(false);
    const served = applyDefinition(waiting.head, { type: "pin", fingerprint: "fp-a", description: {} }, 9);
    expect(served.head.status).toBe("idle");
    expect(served.events).toEqual([{ type: "definition_served", data: { fingerprint: "fp-a" } }]);
    expect(applyDefinition(head(), { type: "wait", reason: "unserved" }, 1).ignored).toMatch(/unpinned/);
  });

  it("migrates: the pin moves, history may be appended between turns, nothing else of the session moves", () => {
    const from = pinned("fp-a");
    const note = {
      item: { role: "user", content: "[updated]" },
      display: { role: "note" as const, text: "[updated]" },
    };
    const t = applyDefinition(
      from,
      { type: "migrate", from: "fp-a", to: "fp-b", description: {}, migration: "transform", appendHistory: [note] },
      3,
    );
    expect(t.head.definition).toEqual({ fingerprint: "fp-b", waiting: null });
    expect(t.head.historyLength).toBe(1);
    expect(t.appendHistory).toEqual([note]);
    expect(t.events.map((e) => e.type)).toEqual(["definition_migrated", "history_appended"]);
    expect(
      applyDefinition(from, { type: "migrate", from: "fp-x", to: "fp-b", description: {}, migration: "accept" }, 3)
        .ignored,
    ).toMatch(/pinned to fp-a, not fp-x/);
    // What a transform may not change.
    expect(checkMigratedHead(from, { ...from, sessionId: "t" }, [])).toMatch(/changed sessionId/);
    expect(checkMigratedHead(from, { ...from, inboxCursor: 4 }, [])).toMatch(/changed inboxCursor/);
    expect(checkMigratedHead(from, { ...from, status: "dancing" }, [])).toMatch(/malformed/);
    expect(checkMigratedHead(from, from, [{ nope: 1 }])).toMatch(/appendHistory\[0\]/);
    expect(checkMigratedHead(from, { ...from, agent: "billing" }, [])).toMatch(/changed agent/);
    expect(checkMigratedHead(from, from, [])).toBeNull();
  });

  it("loads a head written before pinning existed as not pinned", () => {
    const { definition: _, ...legacy } = head();
    expect(parseSessionHead(legacy).definition).toBeNull();
  });
});

describe("the worker and the client with pinned definitions", () => {
  const setup = (sessions: SessionDefinition[], store = new MemoryStore()) => {
    const errors: unknown[] = [];
    const worker = new Worker({
      store,
      sessions,
      pollIntervalMs: 10,
      leaseTtlMs: 300,
      definitionCheckIntervalMs: 20,
      onError: (e) => errors.push(e),
    }).start();
    return { store, worker, errors };
  };

  it("a session started by a client without the definition is pinned by the first worker that drives it", async () => {
    const v1 = define([lookUp()]);
    const { store, worker } = setup([v1]);
    const client = new SessionClient({ store });
    const { sessionId } = await client.startSession({ agent: "support", message: "hello" });
    const done = await client.waitUntilIdle(sessionId);
    expect(done.definition).toEqual({ fingerprint: v1.fingerprint, waiting: null });
    const pins = (await client.readEvents(sessionId)).filter((e) => e.type === "definition_pinned");
    expect(pins.map((e) => e.type === "definition_pinned" && e.data.by)).toEqual(["worker"]);
    expect((await memoryRawReader(store).session(sessionId))?.fingerprint).toBe(v1.fingerprint);
    await worker.stop();
  });

  it("serves several definitions of one agent, each session on its own; the first one listed pins", async () => {
    const v1 = define([lookUp()]);
    const v2 = define([lookUp({ order_id: "number" })]);
    const { store, worker } = setup([v2, v1]);
    const old = new SessionClient({ store, sessions: [v1] });
    const unpinned = new SessionClient({ store });
    const a = await old.startSession({ agent: "support", message: 'call look_up_order {"order_id":"1"}' });
    const b = await unpinned.startSession({ agent: "support", message: 'call look_up_order {"order_id":2}' });
    const doneA = await old.waitUntilIdle(a.sessionId);
    const doneB = await old.waitUntilIdle(b.sessionId);
    expect(doneA.definition?.fingerprint).toBe(v1.fingerprint);
    expect(doneA.turn?.finalText).toBe("Results: look_up_order -> order 1");
    expect(doneB.definition?.fingerprint).toBe(v2.fingerprint);
    expect(doneB.turn?.finalText).toBe("Results: look_up_order -> order 2");
    await expect(old.startSession({ agent: "billing" })).rejects.toSatisfy(UnknownAgentError.isInstance);
    await worker.stop();
  });

  it("refuses two definitions that migrate from one fingerprint", () => {
    const v1 = define([lookUp()]);
    const a = define([lookUp(), cancel], { migrations: [{ from: v1.fingerprint, accept: true }] });
    const b = define([cancel], { policies: {}, migrations: [{ from: v1.fingerprint, accept: true }] });
    expect(() => new Worker({ store: new MemoryStore(), sessions: [a, b] })).toThrow(
      /two definitions of the worker migrate/,
    );
    // A fingerprint the worker serves runs on its own definition: the migration from it never applies.
    expect(() => new Worker({ store: new MemoryStore(), sessions: [v1, a, b] })).not.toThrow();
  });

  it("a transform that returns a head that does not fit is a MigrationError; the session waits unchanged", async () => {
    const v1 = define([lookUp()]);
    const store = new MemoryStore();
    const first = setup([v1], store);
    const client = new SessionClient({ store, sessions: [v1] });
    const { sessionId } = await client.startSession({ agent: "support", message: "hello" });
    await client.waitUntilIdle(sessionId);
    await first.worker.stop();
    const before = await client.snapshot(sessionId);
    const v2 = define([lookUp(), cancel], {
      migrations: [{ from: v1.fingerprint, transform: ({ head }) => ({ head: { ...head, turnCount: 7 } }) }],
    });
    const second = setup([v2], store);
    await client.sendMessage(sessionId, "again");
    const parked = await client.waitUntilIdle(sessionId);
    expect(parked.status).toBe("waiting_for_definition");
    expect(parked.definition?.waiting?.reason).toBe("migration_failed");
    expect(parked.definition?.waiting?.error).toMatch(/changed turnCount/);
    expect(parked.turnCount).toBe(before.turnCount);
    expect(parked.queuedMessages).toBe(1);
    await until("the MigrationError", () => second.errors.some((e) => MigrationError.isInstance(e)));
    const error = second.errors.find((e) => MigrationError.isInstance(e)) as MigrationError;
    expect(error).toMatchObject({ code: "configuration", sessionId, from: v1.fingerprint, to: v2.fingerprint });
    expect(ConfigurationError.isInstance(error)).toBe(true);
    await second.worker.stop();
    // Back on v1: the message is answered there.
    const third = setup([v1], store);
    const done = await client.waitFor(sessionId, (s) => s.turnCount === 2 && s.status === "idle");
    expect(done.definition).toEqual({ fingerprint: v1.fingerprint, waiting: null });
    await third.worker.stop();
  });

  it("a transform may append a note between turns, which the next turn's model sees", async () => {
    const v1 = define([lookUp()]);
    const store = new MemoryStore();
    const first = setup([v1], store);
    const client = new SessionClient({ store, sessions: [v1] });
    const { sessionId } = await client.startSession({ agent: "support", message: "hello" });
    await client.waitUntilIdle(sessionId);
    await first.worker.stop();
    const runner = new ScriptedRunner({ tools: [lookUp({ order_id: "number" })] });
    const v2 = defineSession({
      name: "support",
      runner,
      policies: { look_up_order: { effect: "read" } },
      migrations: [
        {
          from: v1.fingerprint,
          transform: ({ history }) => {
            expect(history.map((h) => h.display.text)).toEqual(["hello", "You said: hello"]);
            return { appendHistory: [runner.userItem("turn_failure_note", "[note] order IDs are numbers now")] };
          },
        },
      ],
    });
    const second = setup([v2], store);
    await client.sendMessage(sessionId, 'call look_up_order {"order_id":5}');
    const done = await client.waitFor(sessionId, (s) => s.turnCount === 2 && s.status === "idle");
    expect(second.errors).toEqual([]);
    expect(done.definition?.fingerprint).toBe(v2.fingerprint);
    expect(done.messages.map((m) => m.text)).toContain("[note] order IDs are numbers now");
    expect(done.turn?.finalText).toBe("Results: look_up_order -> order 5");
    const migrated = (await client.readEvents(sessionId)).find((e) => e.type === "definition_migrated");
    expect(migrated?.type === "definition_migrated" && migrated.data.appendedItems).toBe(1);
    await second.worker.stop();
  });
});
