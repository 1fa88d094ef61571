/**
 * The checks themselves can fail: a small real run (one worker process) is loaded from the
 * database, then copies of its rows are broken in one way each, and the checks must name each
 * break. The comparison is with the unbroken rows' own findings, so this test is about the checks.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createTestDatabase, type TestDatabase } from "@durable-agents/store-postgres/testing";
import { checkInvariants, runCrashScenario, type CrashRunResult, type RunData } from "../src/index.js";

let database: TestDatabase;
let run: CrashRunResult;

beforeAll(async () => {
  database = await createTestDatabase();
  run = await runCrashScenario({
    databaseUrl: database.connectionString,
    sessions: 16,
    workers: 1,
    kills: 0,
    seed: 5,
    failureRate: 0,
    // Half of the turns get a cancellation, so that there are receipts to break.
    cancelRate: 0.5,
    timeoutMs: 60_000,
  });
}, 90_000);
afterAll(async () => {
  await database?.drop();
});

function copy(data: RunData): RunData {
  return structuredClone(data);
}

/** The violations the broken copy adds to those of the rows as they were. */
function added(broken: RunData): string[] {
  const options = {
    plan: run.plan,
    workers: run.workers,
    cancels: run.cancels,
    refusedDecisions: run.refusedDecisions,
  };
  const before = new Set(checkInvariants(run.data, options).violations);
  return checkInvariants(broken, options).violations.filter((v) => !before.has(v));
}

interface ReceiptData {
  turnId: string;
  requestId: string | null;
  calls: { toolCallId: string; name: string; effect: string; status: string; attempts: number }[];
}

/** A session's turn_cancelled event (its index among the session's events) that `pick` accepts. */
function receipt(data: RunData, pick: (receipt: ReceiptData, sessionId: string) => boolean) {
  for (const [sessionId, events] of data.events) {
    const index = events.findIndex(
      (e) => e.type === "turn_cancelled" && pick(e.data as unknown as ReceiptData, sessionId),
    );
    if (index >= 0) return { sessionId, events, index, receipt: events[index]!.data as unknown as ReceiptData };
  }
  throw new Error("the run has no cancelled turn of the kind this break needs");
}

function execution(tool: string) {
  const found = run.data.executions.find((e) => e.tool === tool && e.result === "ok");
  if (!found) throw new Error(`the run has no successful ${tool} execution to break`);
  return found;
}

/**
 * An execution of `tool` that returned ok and whose call the session recorded `succeeded` (a
 * cancellation racing a call can record one that returned ok as cancelled or unknown).
 */
function succeededExecution(tool: string) {
  const found = run.data.executions.find(
    (e) =>
      e.tool === tool &&
      e.result === "ok" &&
      (run.data.events.get(e.sessionId) ?? []).some(
        (event) =>
          event.type === "tool_call_completed" &&
          event.data.toolCallId === e.toolCallId &&
          event.data.status === "succeeded",
      ),
  );
  if (!found) throw new Error(`the run has no ${tool} execution recorded succeeded to break`);
  return found;
}

describe("the invariant checks", () => {
  it("find a single-attempt call executed twice", () => {
    const data = copy(run.data);
    const once = execution("non_idempotent_write_auto");
    data.executions.push({ ...once, id: 1e9 });
    expect(added(data).join("\n")).toContain(`single-attempt call ${once.toolCallId} executed 2 times`);
  });

  it("find a read executed more than three times", () => {
    const data = copy(run.data);
    const read = execution("read");
    for (let n = 0; n < 3; n++) data.executions.push({ ...read, id: 1e9 + n, attempt: read.attempt + n + 1 });
    const found = added(data).join("\n");
    expect(found).toContain(`read call ${read.toolCallId} executed 4 times (at most 3)`);
    expect(found).toContain("whose start was never committed");
  });

  /** Inserts a `call_reconciled` event for `run`'s call right before the call's outcome (same commit time). */
  function reconciledBefore(data: RunData, run: { sessionId: string; toolCallId: string }, found: string) {
    const events = data.events.get(run.sessionId)!;
    const index = events.findIndex((e) => e.type === "tool_call_completed" && e.data.toolCallId === run.toolCallId);
    const outcome = events[index]!;
    events.splice(index, 0, {
      seq: outcome.seq,
      at: outcome.at,
      type: "call_reconciled",
      data: { turnId: outcome.data.turnId, toolCallId: run.toolCallId, found, attempts: 1, status: "succeeded" },
    });
    return outcome;
  }

  it("find a call reconciled done that was executed again", () => {
    const data = copy(run.data);
    const write = execution("idempotent_write_checked");
    const outcome = reconciledBefore(data, write, "done");
    data.executions.push({ ...write, id: 1e9, attempt: write.attempt + 1, startedAt: outcome.at + 5 });
    expect(added(data).join("\n")).toContain(
      `call ${write.toolCallId} was reconciled done at ${outcome.at}, yet attempt ${write.attempt + 1} started`,
    );
  });

  it("find a single-attempt call found not done that ran again without a new approval", () => {
    const data = copy(run.data);
    const write = execution("non_idempotent_write_checked");
    const outcome = reconciledBefore(data, write, "not_done");
    data.executions.push({ ...write, id: 1e9, attempt: 2, startedAt: outcome.at + 5 });
    const found = added(data).join("\n");
    expect(found).toContain(`single-attempt call ${write.toolCallId} ran again (attempt 2) without a new approval`);
    expect(found).toContain(`single-attempt call ${write.toolCallId} executed 2 times (at most 1)`);
  });

  it("find an attention interrupt for a call that is not unknown, and one left out", () => {
    const data = copy(run.data);
    const write = succeededExecution("non_idempotent_write_checked");
    const events = data.events.get(write.sessionId)!;
    const index = events.findIndex((e) => e.type === "tool_call_completed" && e.data.toolCallId === write.toolCallId);
    const outcome = events[index]!;
    const interrupt = {
      interruptId: `${String(outcome.data.turnId)}-attention-${write.toolCallId}`,
      kind: "attention",
      turnId: outcome.data.turnId,
      toolCallId: write.toolCallId,
    };
    events.splice(index + 1, 0, { seq: outcome.seq, at: outcome.at, type: "attention_required", data: { interrupt } });
    const found = added(data).join("\n");
    expect(found).toContain(`raises attention for call ${write.toolCallId}, which is succeeded`);
    expect(found).toMatch(
      new RegExp(`${write.sessionId}: attention interrupts pending \\[\\], raised \\[${interrupt.interruptId}\\]`),
    );
  });

  it("find an idempotent write that saw another key", () => {
    const data = copy(run.data);
    const write = data.executions.find((e) => e.tool === "idempotent_write")!;
    (write as { idempotencyKey: string }).idempotencyKey = "someone-else/turn-1/x";
    expect(added(data).join("\n")).toMatch(/idempotent write .* saw key\(s\) someone-else\/turn-1\/x/);
  });

  it("find overlapping executions of one session by two workers", () => {
    const data = copy(run.data);
    const first = data.executions[0]!;
    data.executions.push({ ...first, id: 1e9, toolCallId: `${first.toolCallId}`, workerPid: 1, attempt: 99 });
    expect(added(data).join("\n")).toContain(`while worker 1 ran`);
  });

  it("find a gap in a session's event seqs and a lost message", () => {
    const data = copy(run.data);
    const [sessionId, events] = [...data.events.entries()][0]!;
    const index = events.findIndex((e) => e.type === "turn_started");
    events.splice(index, 1);
    const found = added(data).join("\n");
    expect(found).toContain(`${sessionId}: event seqs have a gap`);
    expect(found).toMatch(new RegExp(`${sessionId}: \\d+ accepted message\\(s\\) started \\d+ turn\\(s\\)`));
  });

  it("find a call whose arguments are not JSON (the model read another text as the turn's message)", () => {
    const data = copy(run.data);
    for (const [sessionId, events] of data.events) {
      const asked = events.find((e) => e.type === "tool_calls_requested");
      if (!asked) continue;
      const call = (asked.data as { calls: { toolCallId: string; arguments: string }[] }).calls[0]!;
      call.arguments = `${call.arguments}" was cancelled by a person.`;
      expect(added(data).join("\n")).toContain(`${sessionId}: ${String(asked.data.turnId)} asked for`);
      expect(added(data).join("\n")).toContain(`${call.toolCallId} with arguments that are not JSON`);
      return;
    }
    throw new Error("the run has no tool call to break");
  });

  it("find a decision accepted twice and a session left waiting", () => {
    const data = copy(run.data);
    const [sessionId, inbox] = [...data.inbox.entries()].find(([, entries]) =>
      entries.some((e) => e.entry.kind === "resolution"),
    )!;
    const resolution = inbox.find((e) => e.entry.kind === "resolution")!;
    inbox.push({ ...resolution, seq: 999 });
    data.sessions.get(sessionId)!.head.status = "awaiting_approval";
    const found = added(data).join("\n");
    expect(found).toMatch(/has 2 accepted decision\(s\), not 1/);
    expect(found).toContain(`${sessionId}: ends awaiting_approval, not idle`);
  });

  it("find a call whose outcome is not what its tool did", () => {
    const data = copy(run.data);
    const picked = succeededExecution("idempotent_write");
    const write = data.executions.find((e) => e.id === picked.id)!;
    (write as { result: string }).result = "error";
    expect(added(data).join("\n")).toContain(`call ${write.toolCallId} is recorded succeeded, but its attempt`);
  });

  it("find a receipt that leaves out a call of its turn, and one that misstates an outcome", () => {
    const data = copy(run.data);
    const found = receipt(data, (r) => r.calls.length >= 2);
    const [left, misstated] = found.receipt.calls;
    found.receipt.calls = found.receipt.calls.filter((call) => call !== left);
    misstated!.status = misstated!.status === "succeeded" ? "failed" : "succeeded";
    const broken = added(data).join("\n");
    expect(broken).toContain(
      `${found.sessionId}: event ${found.events[found.index]!.seq} (turn_cancelled) lists calls [`,
    );
    expect(broken).toContain(`lists call ${misstated!.toolCallId} as ${misstated!.status}, its outcome was`);
  });

  it("find a cancelled turn with a second receipt", () => {
    const data = copy(run.data);
    const found = receipt(data, () => true);
    const last = found.events.at(-1)!;
    found.events.push({ ...found.events[found.index]!, seq: last.seq + 1 });
    expect(added(data).join("\n")).toContain(
      `${found.sessionId}: ${found.receipt.turnId} ended cancelled with 2 turn_cancelled receipt(s)`,
    );
  });

  it("find a turn cancelled by no accepted cancellation, and an accepted one missing from the inbox", () => {
    const data = copy(run.data);
    const found = receipt(data, (r) => r.requestId !== null);
    const inbox = data.inbox.get(found.sessionId)!;
    const index = inbox.findIndex((e) => e.entry.kind === "cancel" && e.entry.requestId === found.receipt.requestId);
    inbox.splice(index, 1);
    const broken = added(data).join("\n");
    expect(broken).toContain(
      `${found.receipt.turnId} was cancelled by ${found.receipt.requestId}, which is no accepted cancellation of it`,
    );
    expect(broken).toContain(`cancellation ${found.receipt.requestId} is in the inbox 0 time(s), not once`);
  });

  it("find a single-attempt call that executed but is recorded cancelled", () => {
    const data = copy(run.data);
    let call: { toolCallId: string; name: string } | undefined;
    const found = receipt(data, (r) => {
      call = r.calls.find((c) => c.effect === "non_idempotent_write" && c.status === "cancelled" && c.attempts === 0);
      return call !== undefined;
    });
    const template = data.executions[0]!;
    data.executions.push({
      ...template,
      id: 1e9,
      sessionId: found.sessionId,
      turnId: found.receipt.turnId,
      tool: call!.name,
      toolCallId: call!.toolCallId,
      attempt: 1,
      result: "ok",
    });
    expect(added(data).join("\n")).toContain(
      `single-attempt call ${call!.toolCallId} executed (ok) but is recorded cancelled`,
    );
  });

  it("find a tool of a cancelled turn that started after the turn's receipt", () => {
    const data = copy(run.data);
    const ran = data.executions.find((e) =>
      data.events.get(e.sessionId)?.some((event) => event.type === "turn_cancelled" && event.data.turnId === e.turnId),
    );
    if (!ran) throw new Error("the run has no execution in a cancelled turn");
    const at = data.events
      .get(ran.sessionId)!
      .find((e) => e.type === "turn_cancelled" && e.data.turnId === ran.turnId)!.at;
    (ran as { startedAt: number }).startedAt = at + 5;
    if (ran.finishedAt !== null) (ran as { finishedAt: number }).finishedAt = at + 6;
    expect(added(data).join("\n")).toContain(
      `call ${ran.toolCallId} of cancelled ${ran.turnId} started at ${at + 5}, after its receipt`,
    );
  });

  it("find a decision accepted before its turn's cancellation that was never applied, and a refusal of a call that ran", () => {
    const data = copy(run.data);
    let cancelled: { toolCallId: string } | undefined;
    const found = receipt(data, (r) => {
      cancelled = r.calls.find(
        (c) => c.effect === "non_idempotent_write" && c.status === "cancelled" && c.attempts === 0,
      );
      return cancelled !== undefined;
    });
    const interrupt = found.events
      .map((e) => e.data.interrupt as { interruptId: string; toolCallId: string } | undefined)
      .find((i) => i?.toolCallId === cancelled!.toolCallId);
    if (!interrupt) throw new Error("the cancelled call waited for no interrupt");
    const inbox = data.inbox.get(found.sessionId)!;
    const cancel = inbox.find((e) => e.entry.kind === "cancel" && e.entry.requestId === found.receipt.requestId)!;
    inbox.push({
      seq: cancel.seq - 1,
      dedupeKey: `resolution:${interrupt.interruptId}`,
      entry: { kind: "resolution", interruptId: interrupt.interruptId, approved: true, message: null },
    });
    // A call whose session recorded it succeeded (a cancellation racing a call can record one that returned ok as cancelled).
    const succeeded = succeededExecution("non_idempotent_write");
    const ranInterrupt = [...run.data.events.get(succeeded.sessionId)!]
      .map((e) => e.data.interrupt as { interruptId: string; toolCallId: string; turnId: string } | undefined)
      .find((i) => i?.toolCallId === succeeded.toolCallId)!;
    const options = {
      plan: run.plan,
      workers: run.workers,
      cancels: run.cancels,
      refusedDecisions: [
        ...run.refusedDecisions,
        {
          sessionId: succeeded.sessionId,
          interruptId: ranInterrupt.interruptId,
          turnId: ranInterrupt.turnId,
          code: "session_state" as const,
          kind: "first" as const,
        },
      ],
    };
    const before = new Set(
      checkInvariants(run.data, { ...options, refusedDecisions: run.refusedDecisions }).violations,
    );
    const broken = checkInvariants(data, options)
      .violations.filter((v) => !before.has(v))
      .join("\n");
    expect(broken).toContain(
      `the decision for ${interrupt.interruptId} (inbox ${cancel.seq - 1}) came before its turn's cancellation`,
    );
    expect(broken).toContain(
      `a decision for ${ranInterrupt.interruptId} was refused (session_state), but its call ended succeeded`,
    );
  });

  it("find a call recorded cancelled in a turn that was not cancelled", () => {
    const data = copy(run.data);
    for (const [sessionId, events] of data.events) {
      const completed = new Set(events.filter((e) => e.type === "turn_completed").map((e) => e.data.turnId));
      const outcome = events.find((e) => e.type === "tool_call_completed" && completed.has(e.data.turnId));
      if (!outcome) continue;
      (outcome.data as { status: string }).status = "cancelled";
      expect(added(data).join("\n")).toContain(
        `${sessionId}: ${String(outcome.data.name)} call ${String(outcome.data.toolCallId)} ended cancelled, which its effect cannot give outside a cancelled turn`,
      );
      return;
    }
    throw new Error("the run has no completed turn with a call");
  });

  describe("with reads held for their model's result (readsMayRunUncounted)", () => {
    // A worker that was killed, and one that lived, beside the run's own (their runs are placed
    // before every run of the session, so no window overlaps another worker's).
    const killedPid = 999_001;
    const livePid = 999_002;
    const workers = () => [
      ...run.workers,
      { pid: killedPid, startedAt: 0, readyAt: 0, killedAt: 2, exitedAt: 3, exit: "SIGKILL" },
      { pid: livePid, startedAt: 0, readyAt: 0, killedAt: null, exitedAt: 3, exit: "0" },
    ];
    /** The violations `data` adds, and its stats, with the allowance on or off. */
    function checked(data: RunData, allow: boolean) {
      const options = {
        plan: run.plan,
        workers: workers(),
        cancels: run.cancels,
        refusedDecisions: run.refusedDecisions,
        ...(allow ? { readsMayRunUncounted: true } : {}),
      };
      const before = new Set(checkInvariants(run.data, options).violations);
      const result = checkInvariants(data, options);
      return { added: result.violations.filter((v) => !before.has(v)), stats: result.stats };
    }
    /** A run of `of`'s call before all of the session's, by `pid`, with `attempt`. */
    function earlier(of: ReturnType<typeof execution>, pid: number, id: number, changes: object = {}) {
      return { ...of, id, workerPid: pid, startedAt: 1, finishedAt: 2, ...changes };
    }

    it("allow a read one run its attempts do not list, first, in a killed worker, and count it", () => {
      const data = copy(run.data);
      const read = succeededExecution("read");
      data.executions.push(earlier(read, killedPid, 1e9));
      const allowed = checked(data, true);
      expect(allowed.added).toEqual([]);
      expect(allowed.stats.uncountedReadRuns).toBe(1);
      // Without the allowance the same rows are a violation.
      expect(checked(data, false).added.join("\n")).toContain(`call ${read.toolCallId} ran one attempt twice`);
    });

    it("allow it for a read whose call no stored response asked for (the turn ended before the model ran again)", () => {
      const data = copy(run.data);
      const read = succeededExecution("read");
      data.executions.push(earlier(read, killedPid, 1e9, { toolCallId: "call_lost_with_its_worker" }));
      expect(checked(data, true).added).toEqual([]);
      expect(checked(data, false).added.join("\n")).toContain(
        "a tool ran for call call_lost_with_its_worker, which no model response requested",
      );
    });

    it("find such a run in a worker that was not killed, a second one, and one of a write", () => {
      const live = copy(run.data);
      const read = succeededExecution("read");
      live.executions.push(earlier(read, livePid, 1e9));
      expect(checked(live, true).added.join("\n")).toContain(`call ${read.toolCallId} ran one attempt twice`);

      const twice = copy(run.data);
      twice.executions.push(earlier(read, killedPid, 1e9), earlier(read, killedPid, 1e9 + 1, { startedAt: 1.5 }));
      const second = checked(twice, true);
      expect(second.added.join("\n")).toContain(`call ${read.toolCallId} ran one attempt twice`);
      expect(second.stats.uncountedReadRuns).toBe(1);

      const write = copy(run.data);
      const key = succeededExecution("idempotent_write");
      write.executions.push(earlier(key, killedPid, 1e9));
      expect(checked(write, true).added.join("\n")).toContain(`call ${key.toolCallId} ran one attempt twice`);
    });
  });
});
