/**
 * A property-based test of the state machine: random sequences of inputs (inbox entries, redelivered
 * entries, results of started steps, late and duplicate results, results of steps a recovery
 * interrupted, recoveries, ticks, graceful stops, batches, inputs that fit nothing, cancellations,
 * steered messages, checks of calls in doubt and attention resolutions) never make `apply` or
 * `applyAll` throw, and keep the machine's promises after every transition.
 *
 * Configuration: `FC_NUM_RUNS` runs (default 300) of up to 80 inputs each. Every run draws a new
 * seed; on failure fast-check prints the shrunk counterexample with `{ seed, path }`. Replay it with
 * `FC_SEED=<seed> FC_PATH=<path> npx vitest run test/machine.property.test.ts` (FC_PATH is optional:
 * with the seed alone the same sequence is generated and shrunk again).
 */
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import {
  finalCallStatuses,
  parseSessionHead,
  type HistoryItem,
  type InboxItem,
  type SessionHead,
} from "../src/index.js";
import {
  apply,
  applyAll,
  deriveStatus,
  newSessionHead,
  type DueStep,
  type MachineConfig,
  type MachineInput,
  type Transition,
} from "../src/engine.js";
import { currentCalls, isStarted, stepKey } from "../src/machine.js";

const numRuns = Number(process.env.FC_NUM_RUNS ?? 300);
const seed = process.env.FC_SEED === undefined ? undefined : Number(process.env.FC_SEED);
const path = process.env.FC_PATH;

const item = (role: "user" | "note", text: string): HistoryItem => ({ item: { role, text }, display: { role, text } });
const usage = { modelCalls: 1, inputTokens: 3, outputTokens: 2, totalTokens: 5 };
const toolNames = [
  "read_t",
  "idem_t",
  "write_t",
  "unclassified_t",
  "write_now",
  "write_checked",
  "idem_checked",
  "ghost",
] as const;
// The machine only needs to know that these policies declare `reconcile`; it never calls it.
const reconcile = () => ({ status: "unknown" as const });
const config: MachineConfig = {
  maxModelSteps: 4,
  cancelGraceMs: 1_000,
  failureNote: (text) => item("note", text),
  modelRetry: { maxAttempts: 3, initialDelayMs: 100, maxDelayMs: 400, factor: 2 },
  toolBackoff: { initialDelayMs: 100, maxDelayMs: 400, factor: 2 },
  tools: toolNames.filter((name) => name !== "ghost").map((name) => ({ name, approval: "never" as const })),
  policies: {
    read_t: { effect: "read" },
    idem_t: { effect: "idempotent_write" },
    write_t: { effect: "non_idempotent_write" },
    unclassified_t: { effect: "unclassified" },
    write_now: { effect: "non_idempotent_write", needsApproval: false },
    write_checked: { effect: "non_idempotent_write", needsApproval: false, reconcile },
    idem_checked: { effect: "idempotent_write", reconcile },
  },
};

type Action =
  | { kind: "message"; batch: boolean }
  | { kind: "decide"; pick: number; approved: boolean; batch: boolean }
  | { kind: "redeliver"; pick: number; batch: boolean }
  | {
      kind: "result";
      pick: number;
      startedOnly: boolean;
      outcome: number;
      calls: { tool: number; id: number; approval: boolean }[];
      batch: boolean;
    }
  | { kind: "replay"; pick: number; batch: boolean }
  | { kind: "recover"; batch: boolean }
  | { kind: "tick"; ms: number; batch: boolean }
  | { kind: "stop"; on: boolean }
  | { kind: "cancel"; pick: number; batch: boolean }
  | { kind: "steer"; batch: boolean }
  | { kind: "attend"; pick: number; outcome: number; batch: boolean }
  | { kind: "garbage"; pick: number; batch: boolean };

const batch = fc.boolean();
const action: fc.Arbitrary<Action> = fc.oneof(
  { weight: 3, arbitrary: fc.record({ kind: fc.constant("message" as const), batch }) },
  {
    weight: 3,
    arbitrary: fc.record({ kind: fc.constant("decide" as const), pick: fc.nat(), approved: fc.boolean(), batch }),
  },
  { weight: 1, arbitrary: fc.record({ kind: fc.constant("redeliver" as const), pick: fc.nat(), batch }) },
  {
    weight: 8,
    arbitrary: fc.record({
      kind: fc.constant("result" as const),
      pick: fc.nat(),
      startedOnly: fc.boolean(),
      outcome: fc.nat({ max: 9 }),
      calls: fc.array(
        fc.record({ tool: fc.nat({ max: toolNames.length - 1 }), id: fc.nat({ max: 3 }), approval: fc.boolean() }),
        { maxLength: 3 },
      ),
      batch,
    }),
  },
  { weight: 2, arbitrary: fc.record({ kind: fc.constant("replay" as const), pick: fc.nat(), batch }) },
  { weight: 1, arbitrary: fc.record({ kind: fc.constant("recover" as const), batch }) },
  { weight: 3, arbitrary: fc.record({ kind: fc.constant("tick" as const), ms: fc.nat({ max: 600 }), batch }) },
  { weight: 1, arbitrary: fc.record({ kind: fc.constant("stop" as const), on: fc.boolean() }) },
  { weight: 2, arbitrary: fc.record({ kind: fc.constant("cancel" as const), pick: fc.nat(), batch }) },
  { weight: 2, arbitrary: fc.record({ kind: fc.constant("steer" as const), batch }) },
  {
    weight: 2,
    arbitrary: fc.record({ kind: fc.constant("attend" as const), pick: fc.nat(), outcome: fc.nat({ max: 5 }), batch }),
  },
  { weight: 1, arbitrary: fc.record({ kind: fc.constant("garbage" as const), pick: fc.nat(), batch }) },
);

const garbage: unknown[] = [
  null,
  { type: "turn_failed", error: "x" },
  { type: "calls_started", toolCallIds: ["id0"] },
  { type: "inbox", item: { seq: 1_000_000, kind: "message", text: "no item", messageId: null } },
  { type: "model_completed", turnId: "turn-1", modelStep: 1, attempt: 1, result: null },
  { type: "call_finished", turnId: "turn-1", toolCallId: "r1-id0", attempt: 1, outcome: null },
  { type: "inbox" },
  { type: "recover" },
  { type: "model_completed" },
  { type: "call_attempt_failed" },
  { type: "reconcile_finished", turnId: "turn-1", toolCallId: "r1-id0", attempt: 1, result: null },
  { type: "reconcile_attempt_failed" },
  { type: "inbox", item: { seq: 1_000_001, kind: "attention", interruptId: "x", outcome: "maybe", output: null } },
];

function deepFreeze<T>(value: T): T {
  if (value !== null && typeof value === "object" && !Object.isFrozen(value)) {
    for (const key of Object.keys(value)) deepFreeze((value as Record<string, unknown>)[key]);
    Object.freeze(value);
  }
  return value;
}

/** What a run went through: applied and ignored inputs, and events, by type. */
type Stats = Map<string, number>;
const count = (stats: Stats, key: string, n = 1) => stats.set(key, (stats.get(key) ?? 0) + n);

/** Plays the actions against the machine, checking its promises after every transition. */
function play(actions: readonly Action[], stats: Stats = new Map()): Stats {
  let head: SessionHead = deepFreeze(newSessionHead("s", "agent", "2026-01-01T00:00:00.000Z"));
  let now = 1_000;
  let startSteps = true;
  let nextSeq = 1;
  let responses = 0;
  const inbox: InboxItem[] = [];
  const appliedSeqs = new Set<number>();
  const launched: DueStep[] = [];
  /** Keys of steps launched since the last recovery: none may be launched again. */
  const live = new Set<string>();
  const singleAttemptStarts = new Map<string, number>();
  const delivered: MachineInput[] = [];
  let held: MachineInput[] = [];
  const receipts = new Set<string>();
  /** How often each steered text entered the history. */
  const steeredInHistory = new Map<string, number>();
  /** Interrupts that offered a call again after a check found it not done, and the approvals each call got. */
  const offeredAgain = new Map<string, string>();
  const approvedAgain = new Map<string, number>();

  const check = (before: SessionHead, inputs: readonly MachineInput[], t: Transition) => {
    const what = inputs.map((i) => (i && typeof i === "object" ? i.type : String(i))).join(", ");
    expect(JSON.stringify(before), `${what}: the given head is unchanged`).toBe(beforeJson);
    if (t.ignored !== null && inputs.length === 1) {
      expect(t.head, what).toBe(before);
      expect(t.changed, what).toBe(false);
      expect(t.events, what).toEqual([]);
      expect(t.due.steps, what).toEqual([]);
    }
    if (!t.changed) {
      expect(t.events, what).toEqual([]);
      expect(t.appendHistory, what).toEqual([]);
      expect(JSON.stringify(t.head), what).toBe(JSON.stringify(before));
    }
    // Stored state stays loadable, with its status derived from it.
    expect(() => parseSessionHead(JSON.parse(JSON.stringify(t.head))), what).not.toThrow();
    expect(t.head.status, what).toBe(deriveStatus(t.head));
    // Versions and sequence numbers only grow.
    expect(t.head.inboxCursor, what).toBeGreaterThanOrEqual(before.inboxCursor);
    expect(t.head.turnCount, what).toBeGreaterThanOrEqual(before.turnCount);
    expect(t.head.historyLength, what).toBe(before.historyLength + t.appendHistory.length);
    expect(t.head.usage.modelCalls, what).toBeGreaterThanOrEqual(before.usage.modelCalls);
    if (t.head.turn && before.turn && t.head.turn.turnId === before.turn.turnId) {
      expect(t.head.turn.modelSteps, what).toBeGreaterThanOrEqual(before.turn.modelSteps);
      expect(t.head.turn.steps.length, what).toBeGreaterThanOrEqual(before.turn.steps.length);
      for (const call of before.turn.calls) {
        const after = t.head.turn.calls.find((c) => c.toolCallId === call.toolCallId && c.response === call.response)!;
        expect(after.attempts, what).toBeGreaterThanOrEqual(call.attempts);
      }
    }
    // Each inbox entry is applied once: a non-ignored entry moves the cursor to its seq, exactly once.
    if (inputs.length === 1 && inputs[0]?.type === "inbox" && t.ignored === null) {
      const seq = inputs[0].item.seq;
      expect(appliedSeqs.has(seq), `inbox entry ${seq} applied twice`).toBe(false);
      expect(t.head.inboxCursor).toBe(seq);
      appliedSeqs.add(seq);
    }
    // Offers again and their approvals first: a call approved again starts in the same transition.
    for (const event of t.events) {
      if (event.type === "interrupt_created" && event.data.interrupt.reason !== null) {
        // Offered again only for a call that a check found not done. The head is the batch's last: when
        // a later input of the batch ended the turn (a cancellation, and a queued message started the
        // next), the check's finding is in this transition's events.
        const { turnId, toolCallId } = event.data.interrupt;
        if (t.head.turn?.turnId === turnId) {
          const call = t.head.turn.calls.find((c) => c.toolCallId === toolCallId);
          expect(call?.reconciled?.found === "not_done" || t.head.turn.followUp !== null, what).toBe(true);
        } else {
          // (or the turn started in it, as the rerun a person asked for: offered at its start)
          const found = t.events.find(
            (e) => e.type === "call_reconciled" && e.data.turnId === turnId && e.data.toolCallId === toolCallId,
          );
          const rerun = t.events.some((e) => e.type === "turn_started" && e.data.turnId === turnId);
          expect((found?.type === "call_reconciled" && found.data.found === "not_done") || rerun, what).toBe(true);
        }
        offeredAgain.set(
          event.data.interrupt.interruptId,
          `${event.data.interrupt.turnId}/${event.data.interrupt.toolCallId}`,
        );
      }
      if (event.type === "interrupt_resolved" && event.data.approved) {
        const id = offeredAgain.get(event.data.interruptId);
        if (id) approvedAgain.set(id, (approvedAgain.get(id) ?? 0) + 1);
      }
    }
    // A started step is launched once, and is started in the head it comes with.
    for (const step of t.due.steps) {
      const key = stepKey(step);
      expect(live.has(key), `${what}: ${key} launched twice`).toBe(false);
      expect(isStarted(t.head, step), `${what}: ${key} is started`).toBe(true);
      live.add(key);
      launched.push(step);
      if (step.kind === "CallSingleAttemptTool") {
        const id = `${step.turnId}/${step.toolCallId}`;
        singleAttemptStarts.set(id, (singleAttemptStarts.get(id) ?? 0) + 1);
        expect(singleAttemptStarts.get(id), `${id} started twice`).toBeLessThanOrEqual(
          1 + (approvedAgain.get(id) ?? 0),
        );
      }
    }
    // A single-attempt call is never started twice (whatever its record says elsewhere), unless a
    // check found it not done and a person approved it again.
    for (const turnCall of t.head.turn?.calls ?? []) {
      if (turnCall.step === "CallSingleAttemptTool")
        expect(turnCall.attempts, what).toBeLessThanOrEqual(
          1 + (approvedAgain.get(`${t.head.turn!.turnId}/${turnCall.toolCallId}`) ?? 0),
        );
    }
    // A turn being cancelled starts nothing; a cancelled turn has one receipt, covering all its calls with final statuses.
    if (before.turn?.phase === "cancelling" && t.head.turn?.turnId === before.turn.turnId) {
      for (const call of before.turn.calls) {
        const after = t.head.turn.calls.find((c) => c.toolCallId === call.toolCallId && c.response === call.response)!;
        expect(after.attempts, `${what}: a call of a cancelling turn started again`).toBe(call.attempts);
      }
    }
    for (const step of t.due.steps) {
      expect(t.head.turn?.turnId, what).toBe(step.turnId);
      // A check of a call in doubt also runs while its turn is being cancelled.
      const phases = step.kind === "ReconcileCall" ? ["tools", "cancelling"] : ["model", "tools"];
      expect(phases, `${what}: a step launched for a turn that is not running`).toContain(t.head.turn?.phase);
    }
    for (const event of t.events) {
      // A call a check found done is succeeded, and never runs again (no attempt after it).
      if (event.type === "call_reconciled" && event.data.found === "done")
        expect(event.data.status, what).toBe("succeeded");
      // Every call left outcome_unknown asks a person.
      if (event.type === "tool_call_completed" && event.data.status === "outcome_unknown") {
        expect(
          t.head.pendingInterrupts.some(
            (i) => i.kind === "attention" && i.toolCallId === event.data.toolCallId && i.turnId === event.data.turnId,
          ) || t.events.some((e) => e.type === "attention_resolved" && e.data.toolCallId === event.data.toolCallId),
          `${what}: ${event.data.toolCallId} is unknown without an attention interrupt`,
        ).toBe(true);
      }
      if (event.type === "turn_cancelled") {
        expect(receipts.has(event.data.turnId), `${event.data.turnId} has two receipts`).toBe(false);
        receipts.add(event.data.turnId);
        for (const call of event.data.calls) expect(finalCallStatuses, what).toContain(call.status);
        const turnBefore = before.turn?.turnId === event.data.turnId ? before.turn : null;
        for (const call of turnBefore?.calls ?? [])
          expect(
            event.data.calls.some((c) => c.toolCallId === call.toolCallId),
            `${what}: the receipt covers ${call.toolCallId}`,
          ).toBe(true);
      }
      if (event.type === "history_appended")
        for (const display of event.data.items)
          if (display.text.startsWith("steer "))
            steeredInHistory.set(display.text, (steeredInHistory.get(display.text) ?? 0) + 1);
    }
    for (const [text, times] of steeredInHistory) expect(times, `${text} entered the history twice`).toBe(1);
    // Every call attempt the transition started is launched (in a batch, a later recovery may have interrupted one).
    const callStarts = t.events.filter((e) => e.type === "step_started" && e.data.step.startsWith("Call")).length;
    const callLaunches = t.due.steps.filter((s) => s.kind !== "RunModel" && s.kind !== "ReconcileCall").length;
    if (inputs.length === 1) expect(callStarts, what).toBe(callLaunches);
    else expect(callStarts, what).toBeGreaterThanOrEqual(callLaunches);
  };

  let beforeJson = "";
  const feed = (input: MachineInput, batchIt: boolean) => {
    held.push(input);
    if (batchIt && held.length < 3) return;
    const inputs = held;
    held = [];
    const before = head;
    beforeJson = JSON.stringify(before);
    const ctx = { config, now, startSteps };
    const t = inputs.length === 1 ? apply(before, inputs[0]!, ctx) : applyAll(before, inputs, ctx);
    if (inputs.some((i) => i?.type === "recover")) live.clear();
    check(before, inputs, t);
    for (const i of inputs) count(stats, `input:${i && typeof i === "object" ? i.type : "null"}`);
    if (t.ignored !== null)
      count(stats, inputs.length === 1 ? `ignored:${inputs[0]?.type ?? "null"}` : "ignored:batch");
    if (inputs.length > 1) count(stats, "batch");
    for (const e of t.events)
      count(stats, e.type === "tool_call_completed" ? `outcome:${e.data.status}` : `event:${e.type}`);
    for (const step of t.due.steps) count(stats, `launch:${step.kind}`);
    if (inputs.length > 1) for (const i of inputs) if (i?.type === "inbox" && i.item) appliedSeqs.add(i.item.seq);
    delivered.push(
      ...inputs.filter(
        (i) =>
          i &&
          (i.type === "model_completed" ||
            i.type.startsWith("call") ||
            i.type.startsWith("reconcile") ||
            i.type === "model_attempt_failed"),
      ),
    );
    head = deepFreeze(t.head);
  };

  for (const a of actions) {
    switch (a.kind) {
      case "message": {
        const entry: InboxItem = { seq: nextSeq++, kind: "message", text: `message ${nextSeq}`, messageId: null };
        inbox.push(entry);
        feed({ type: "inbox", item: entry, userItem: item("user", entry.text) }, a.batch);
        break;
      }
      case "decide": {
        const pending = head.pendingInterrupts;
        const interruptId =
          pending.length > 0 ? pending[a.pick % pending.length]!.interruptId : `turn-${a.pick % 3}-1-1`;
        const entry: InboxItem = {
          seq: nextSeq++,
          kind: "resolution",
          interruptId,
          approved: a.approved,
          message: a.approved ? null : "no",
        };
        inbox.push(entry);
        feed({ type: "inbox", item: entry }, a.batch);
        break;
      }
      case "redeliver": {
        if (inbox.length === 0) break;
        const entry = inbox[a.pick % inbox.length]!;
        feed(
          {
            type: "inbox",
            item: entry,
            ...(entry.kind === "message" || entry.kind === "steer" ? { userItem: item("user", entry.text) } : {}),
          },
          a.batch,
        );
        break;
      }
      case "result": {
        const started = launched.filter((s) => isStarted(head, s));
        const pool = a.startedOnly && started.length > 0 ? started : launched;
        if (pool.length === 0) break;
        const step = pool[a.pick % pool.length]!;
        if (step.kind === "RunModel") {
          const base = { turnId: step.turnId, modelStep: step.modelStep, attempt: step.attempt };
          responses += 1;
          const calls = a.calls.map((c) => ({
            toolCallId: `r${responses}-id${c.id}`,
            name: toolNames[c.tool]!,
            arguments: "{}",
            needsApproval: c.approval && c.tool === 0,
          }));
          const choice = a.outcome % 5;
          const input: MachineInput =
            choice === 0
              ? {
                  type: "model_completed",
                  ...base,
                  result: { kind: "final", items: [item("user", "answer")], text: "answer", usage },
                }
              : choice <= 2
                ? { type: "model_completed", ...base, result: { kind: "tool_calls", calls, runState: "state", usage } }
                : choice === 3
                  ? { type: "model_attempt_failed", ...base, error: "model down" }
                  : ({
                      type: "model_completed",
                      ...base,
                      result: { kind: "final", text: 7 },
                    } as unknown as MachineInput);
          feed(input, a.batch);
        } else if (step.kind === "ReconcileCall") {
          const base = { turnId: step.turnId, toolCallId: step.toolCallId, attempt: step.attempt };
          const choice = a.outcome % 5;
          const input: MachineInput =
            choice === 0
              ? { type: "reconcile_finished", ...base, result: { status: "done", output: "it happened" } }
              : choice === 1
                ? { type: "reconcile_finished", ...base, result: { status: "not_done" } }
                : choice === 2
                  ? { type: "reconcile_finished", ...base, result: { status: "unknown" } }
                  : choice === 3
                    ? { type: "reconcile_attempt_failed", ...base, error: "ledger down" }
                    : ({ type: "reconcile_finished", ...base, result: { status: "done" } } as unknown as MachineInput);
          feed(input, a.batch);
        } else {
          const base = { turnId: step.turnId, toolCallId: step.toolCallId, attempt: step.attempt };
          const choice = a.outcome % 5;
          const input: MachineInput =
            choice === 0
              ? { type: "call_finished", ...base, outcome: { status: "succeeded", output: "ok" } }
              : choice === 1
                ? { type: "call_finished", ...base, outcome: { status: "failed", message: "bad arguments" } }
                : choice === 2
                  ? { type: "call_attempt_failed", ...base, error: "tool down" }
                  : choice === 3
                    ? { type: "call_cancelled", ...base, message: "stopped, changed nothing" }
                    : ({ type: "call_finished", ...base, outcome: { status: "maybe" } } as unknown as MachineInput);
          feed(input, a.batch);
        }
        break;
      }
      case "replay":
        if (delivered.length > 0) feed(delivered[a.pick % delivered.length]!, a.batch);
        break;
      case "recover":
        feed({ type: "recover", fence: actions.indexOf(a) + 1 }, a.batch);
        break;
      case "tick":
        now += a.ms;
        feed({ type: "tick" }, a.batch);
        break;
      case "stop":
        startSteps = !a.on;
        break;
      case "cancel": {
        const turnId = head.turn && a.pick % 4 !== 0 ? head.turn.turnId : `turn-${(a.pick % 3) + 1}`;
        const entry: InboxItem = { seq: nextSeq++, kind: "cancel", turnId, reason: null, requestId: null };
        inbox.push(entry);
        feed({ type: "inbox", item: entry }, a.batch);
        break;
      }
      case "steer": {
        const entry: InboxItem = { seq: nextSeq++, kind: "steer", text: `steer ${nextSeq}`, messageId: null };
        inbox.push(entry);
        feed({ type: "inbox", item: entry, userItem: item("user", entry.text) }, a.batch);
        break;
      }
      case "attend": {
        const attentions = head.pendingInterrupts.filter((i) => i.kind === "attention");
        const other = head.pendingInterrupts.find((i) => i.kind !== "attention")?.interruptId ?? "turn-1-attention-x";
        const interruptId =
          attentions.length > 0 && a.pick % 5 !== 0 ? attentions[a.pick % attentions.length]!.interruptId : other;
        const outcome = (["done", "not_done", "unknown"] as const)[a.outcome % 3]!;
        const entry: InboxItem = {
          seq: nextSeq++,
          kind: "attention",
          interruptId,
          outcome,
          output: outcome === "done" ? "a person saw it happen" : null,
        };
        inbox.push(entry);
        feed({ type: "inbox", item: entry }, a.batch);
        break;
      }
      case "garbage":
        feed(garbage[a.pick % garbage.length] as MachineInput, a.batch);
        break;
    }
  }
  if (held.length > 0) feed(held.pop()!, false);
  // What the head says is running was launched (nothing is started that no engine was told about).
  const turn = head.turn;
  if (turn && (turn.phase === "model" || turn.phase === "tools" || turn.phase === "cancelling")) {
    for (const call of currentCalls(turn)) {
      if (call.status === "reconciling")
        expect(
          launched.some(
            (s) =>
              s.kind === "ReconcileCall" &&
              s.turnId === turn.turnId &&
              s.toolCallId === call.toolCallId &&
              s.attempt === call.reconcileAttempts,
          ),
        ).toBe(true);
      if (call.status === "running")
        expect(
          launched.some(
            (s) =>
              s.kind !== "RunModel" &&
              s.turnId === turn.turnId &&
              s.toolCallId === call.toolCallId &&
              s.attempt === call.attempts,
          ),
        ).toBe(true);
    }
  }
  return stats;
}

describe("the state machine under random inputs", () => {
  it("never throws, starts a single-attempt call at most once, applies inbox entries once, and only grows its counters", () => {
    fc.assert(
      fc.property(fc.array(action, { maxLength: 80, size: "max" }), (actions) => {
        play(actions);
      }),
      { numRuns, ...(seed !== undefined ? { seed } : {}), ...(path !== undefined ? { path } : {}) },
    );
  });

  it("reaches every kind of transition (the generator is not vacuous)", () => {
    const stats: Stats = new Map();
    fc.assert(
      fc.property(fc.array(action, { minLength: 40, maxLength: 80, size: "max" }), (actions) => {
        play(actions, stats);
      }),
      { numRuns: 100, seed: 42 },
    );
    const reached = [
      "event:turn_completed",
      "event:turn_failed",
      "event:interrupt_resolved",
      "event:session_recovered",
      "event:message_queued",
      "outcome:succeeded",
      "outcome:failed",
      "outcome:rejected",
      "outcome:outcome_unknown",
      "outcome:cancelled",
      "event:turn_cancelled",
      "event:turn_cancelling",
      "event:cancel_skipped",
      "event:message_steered",
      "launch:RunModel",
      "launch:CallTool",
      "launch:CallSingleAttemptTool",
      "launch:ReconcileCall",
      "event:call_reconciled",
      "event:attention_required",
      "event:attention_resolved",
      "ignored:reconcile_finished",
      "ignored:inbox",
      "ignored:model_completed",
      "ignored:call_finished",
      "ignored:call_attempt_failed",
      "ignored:null",
      "batch",
    ];
    for (const key of reached) expect(stats.get(key) ?? 0, key).toBeGreaterThan(0);
  });
});
