/**
 * A rolling deploy, with real worker processes of two versions of the agents on one store
 * (PostgreSQL, and one SQLite file): sessions are pinned to the definition they started with.
 *
 * 1. v1 runs alone: four sessions start on it; two wait for approval.
 * 2. v2 starts next to v1 (the deploy rolls): a new session goes to v2; an old session's next turn
 *    and an old session's approval are done by v1.
 * 3. v1 goes (SIGTERM, or SIGKILL): two old sessions get their approvals, and wait for their definition (status
 *    `waiting_for_definition`, an event), with nothing run and nothing failed. A session started by
 *    a client that knows no definition is pinned by the v2 process, to the fingerprint this process
 *    computes for v2.
 * 4. v2 is replaced by a build that registers a migration for one agent: that agent's old session
 *    moves to v2 and runs there (the migration is its own step, with an event); the other agent's
 *    old session, without a migration, goes on waiting.
 * 5. v1 comes back: the waiting session finishes there.
 *
 * Every tool call ran exactly once, in the version the session was on.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import pg from "pg";
import { SessionClient, type SessionSnapshot, type SessionStore } from "@durable-agents/core";
import { migrate, PostgresStore } from "@durable-agents/store-postgres";
import { createTestDatabase, type TestDatabase } from "@durable-agents/store-postgres/testing";
import { SqliteStore } from "@durable-agents/store-sqlite";
import { tempStoreDir } from "@durable-agents/store-sqlite/testing";
import { deployAgents } from "../src/index.js";
import { DeployFleet } from "./support/deploy-workers.js";

interface Backend {
  readonly store: SessionStore;
  readonly workerArgs: readonly string[];
  close(): Promise<void>;
}

async function postgresBackend(): Promise<Backend> {
  const database: TestDatabase = await createTestDatabase();
  const pool = new pg.Pool({ connectionString: database.connectionString, max: 6 });
  pool.on("error", () => {});
  await migrate(pool);
  const store = new PostgresStore({ pool, pollIntervalMs: 500 });
  return {
    store,
    workerArgs: ["--store", "postgres", "--database-url", database.connectionString],
    close: async () => {
      await store.close();
      await pool.end();
      await database.drop();
    },
  };
}

async function sqliteBackend(): Promise<Backend> {
  const dir = tempStoreDir("rolling-deploy-");
  const path = dir.file("sessions.db");
  const store = new SqliteStore({ path });
  return {
    store,
    workerArgs: ["--store", "sqlite", "--sqlite-path", path],
    close: async () => {
      await store.close();
      dir.remove();
    },
  };
}

// How v1 leaves in step 3: a graceful stop withdraws its announcement at once; a process killed
// with SIGKILL leaves it until its time to live (the lease TTL) runs out.
const backends = [
  ["PostgreSQL", postgresBackend, "killed"],
  ["one SQLite file", sqliteBackend, "stopped"],
] as const;

describe.each(backends)("a rolling deploy on %s, v1 %s", (_name, open, leaves) => {
  let backend: Backend;
  let fleet: DeployFleet;
  beforeAll(async () => {
    backend = await open();
    fleet = new DeployFleet(backend.workerArgs);
  });
  afterAll(async () => {
    fleet?.killAll();
    await backend?.close();
  });

  it("old sessions finish on v1, new ones run on v2, a migration moves one agent's sessions and the other's wait", async () => {
    const { store } = backend;
    const [deployV1, billingV1] = deployAgents("v1");
    const [deployV2, billingV2] = deployAgents("v2");
    expect(deployV2!.fingerprint).not.toBe(deployV1!.fingerprint);
    const oldClient = new SessionClient({ store, sessions: deployAgents("v1") });
    const newClient = new SessionClient({ store, sessions: deployAgents("v2") });
    const anyClient = new SessionClient({ store });
    const idle = (id: string) => anyClient.waitUntilIdle(id, { timeoutMs: 30_000 });
    const finished = (id: string, turns: number) =>
      anyClient.waitFor(id, (s) => s.turnCount === turns && s.status === "idle" && s.turn?.phase === "completed", {
        timeoutMs: 30_000,
      });
    const types = async (id: string) => (await anyClient.readEvents(id)).map((e) => e.type);
    const ran = (tool: string, key: string, value: string) =>
      fleet.executions.filter((e) => e.tool === tool && e.args[key] === value);

    // 1. v1 alone.
    const v1 = await fleet.start("v1");
    const chat = await oldClient.startSession({ agent: "deploy", message: 'call look_up_order {"order_id":"1"}' });
    const approveLater = await oldClient.startSession({
      agent: "deploy",
      message: 'call cancel_order {"order_id":"A"}',
    });
    const migrated = await oldClient.startSession({ agent: "deploy", message: 'call cancel_order {"order_id":"M"}' });
    const refund = await oldClient.startSession({ agent: "billing", message: 'call refund {"invoice_id":"B"}' });
    expect((await finished(chat.sessionId, 1)).turn?.finalText).toBe(
      "Results: look_up_order -> order 1 is shipped (v1)",
    );
    const waiting: Record<string, SessionSnapshot> = {};
    for (const { sessionId } of [approveLater, migrated, refund]) {
      waiting[sessionId] = await idle(sessionId);
      expect(waiting[sessionId]!.status).toBe("awaiting_approval");
    }
    expect(waiting[refund.sessionId]!.definition?.fingerprint).toBe(billingV1!.fingerprint);

    // 2. v2 starts next to v1.
    const v2 = await fleet.start("v2");
    const fresh = await newClient.startSession({ agent: "deploy", message: 'call look_up_order {"order_id":"2"}' });
    const freshDone = await finished(fresh.sessionId, 1);
    expect(freshDone.turn?.finalText).toBe("Results: look_up_order -> order 2 is shipped (v2)");
    expect(freshDone.definition?.fingerprint).toBe(deployV2!.fingerprint);
    await anyClient.sendMessage(chat.sessionId, 'call look_up_order {"order_id":"3"}');
    expect((await finished(chat.sessionId, 2)).turn?.finalText).toBe(
      "Results: look_up_order -> order 3 is shipped (v1)",
    );
    await anyClient.approve(approveLater.sessionId, waiting[approveLater.sessionId]!.pendingInterrupts[0]!.interruptId);
    const approved = await finished(approveLater.sessionId, 1);
    expect(approved.turn?.finalText).toBe("Results: cancel_order -> order A is cancelled by v1");
    expect(approved.definition).toEqual({ fingerprint: deployV1!.fingerprint, waiting: null });

    // 3. v1 goes: the old sessions' approvals wait with them for their definition.
    if (leaves === "killed") await v1.kill();
    else await v1.stop();
    for (const { sessionId } of [migrated, refund]) {
      await anyClient.approve(sessionId, waiting[sessionId]!.pendingInterrupts[0]!.interruptId);
    }
    for (const { sessionId } of [migrated, refund]) {
      const parked = await idle(sessionId);
      expect(parked.status).toBe("waiting_for_definition");
      expect(parked.definition?.waiting?.reason).toBe("unserved");
      expect(parked.unappliedDecisions).toBe(1);
      expect(parked.turn?.calls).toEqual(waiting[sessionId]!.turn?.calls);
      expect(await types(sessionId)).toContain("definition_waiting");
      expect(await types(sessionId)).not.toContain("turn_failed");
    }
    expect(ran("cancel_order", "order_id", "M")).toEqual([]);
    expect(ran("refund", "invoice_id", "B")).toEqual([]);
    // Pinned by the v2 process: its fingerprint of v2 is the one this process computes.
    const unpinned = await anyClient.startSession({ agent: "billing", message: "hello" });
    expect((await finished(unpinned.sessionId, 1)).definition?.fingerprint).toBe(billingV2!.fingerprint);

    // 4. A build of v2 with a migration for `deploy` replaces v2.
    const v2m = await fleet.start("v2", { migrate: true });
    await v2.stop();
    const moved = await finished(migrated.sessionId, 1);
    expect(moved.turn?.finalText).toBe("Results: cancel_order -> order M is cancelled by v2 (migrated)");
    expect(moved.definition).toEqual({ fingerprint: deployV2!.fingerprint, waiting: null });
    const events = await anyClient.readEvents(migrated.sessionId);
    const migration = events.find((e) => e.type === "definition_migrated");
    expect(migration?.type === "definition_migrated" && [migration.data.from, migration.data.to]).toEqual([
      deployV1!.fingerprint,
      deployV2!.fingerprint,
    ]);
    expect(events.findIndex((e) => e.type === "definition_migrated")).toBeLessThan(
      events.findIndex((e) => e.type === "interrupt_resolved"),
    );
    // The billing session has no migration: it still waits, and nothing of it ran.
    await new Promise((resolve) => setTimeout(resolve, 1_000));
    const stillWaiting = await anyClient.snapshot(refund.sessionId);
    expect(stillWaiting.status).toBe("waiting_for_definition");
    expect(stillWaiting.definition?.fingerprint).toBe(billingV1!.fingerprint);
    expect(ran("refund", "invoice_id", "B")).toEqual([]);
    expect((await types(refund.sessionId)).filter((t) => t === "definition_waiting")).toHaveLength(1);

    // 5. v1 comes back for it.
    const v1again = await fleet.start("v1");
    expect((await finished(refund.sessionId, 1)).turn?.finalText).toBe(
      "Results: refund -> invoice B is refunded by v1",
    );
    expect(await types(refund.sessionId)).toContain("definition_served");
    await v1again.stop();
    await v2m.stop();

    // Every call ran once, in the version of its session, by the process of that version.
    const pidOf = { [v1.pid]: "v1", [v2.pid]: "v2", [v2m.pid]: "v2", [v1again.pid]: "v1" };
    expect(fleet.executions.map((e) => [e.tool, Object.values(e.args)[0], e.version, pidOf[e.pid]]).sort()).toEqual(
      [
        ["look_up_order", "1", "v1", "v1"],
        ["look_up_order", "2", "v2", "v2"],
        ["look_up_order", "3", "v1", "v1"],
        ["cancel_order", "A", "v1", "v1"],
        ["cancel_order", "M", "v2", "v2"],
        ["refund", "B", "v1", "v1"],
      ].sort(),
    );
    expect(ran("cancel_order", "order_id", "M")[0]?.args.reason).toBe("migrated");
    expect(fleet.errors.filter((line) => !line.includes("ExperimentalWarning"))).toEqual([]);
  }, 120_000);
});
