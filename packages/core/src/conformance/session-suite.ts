/**
 * The session suite: every scenario of the session contract, run through the public API
 * (SessionClient, Worker) for one (runner, store) pair.
 */
import assert from "node:assert/strict";
import { defineSession, type SessionDefinition, type SessionDefinitionOptions } from "../definition.js";
import {
  DuplicateResolutionError,
  InputTooLargeError,
  InterruptNotFoundError,
  InvalidInputError,
  SessionNotFoundError,
  SessionStateError,
  ToolCancelledError,
  ToolExecutionError,
} from "../errors.js";
import type { ToolPolicies, ToolPolicy } from "../policy.js";
import type { SessionEvent, SessionSnapshot, ToolCallRecord } from "../schemas.js";
import type { SessionStore } from "../store.js";
import { currentToolCall } from "../tool-context.js";
import { SessionClient } from "../client.js";
import { Worker } from "../worker.js";
import { scriptedHangs, type ConformanceTool } from "../testing/scripted-rules.js";
import { crashWorker, workerDrives } from "../testing/worker-seams.js";
import type { ConformanceWorker, SessionConformanceOptions, TestApi } from "./types.js";

interface Env {
  readonly store: SessionStore;
  readonly client: SessionClient;
  readonly definition: SessionDefinition;
  readonly workers: ConformanceWorker[];
  startWorker(options?: {
    leaseTtlMs?: number;
    concurrency?: number;
    definition?: SessionDefinition;
  }): ConformanceWorker;
  /** Another definition of the suite's agent, on a runner built from this variant of the tools. */
  defineVersion(variant: ToolVariant, migrations?: SessionDefinitionOptions["migrations"]): Promise<SessionDefinition>;
}

/**
 * The tools of one version of the suite's agent: `v1` (the suite's own), `reason` (`cancel_order`
 * also requires a `reason`: a new argument schema), `extra` (one more tool, `look_up_invoice`).
 */
type ToolVariant = "v1" | "reason" | "extra";

interface Execution {
  readonly tool: string;
  /** The version of the tools that ran it. */
  readonly variant: ToolVariant;
  readonly args: Record<string, unknown>;
  readonly key: string | undefined;
  readonly attempt: number | undefined;
  readonly sessionId: string | undefined;
  readonly startedAt: number;
  endedAt?: number;
}

/** Tools whose every execution is recorded; behaviours are chosen per test through `behave`. */
class ToolBox {
  readonly executions: Execution[] = [];
  readonly gates = new Map<string, { promise: Promise<void>; open: () => void }>();
  readonly failuresLeft = new Map<string, number>();
  /** What the writes with a `reconcile` took effect on, by idempotency key: the service a check reads. */
  readonly ledger = new Map<string, string>();
  /** Every check a `reconcile` made, in order. */
  readonly checks: { tool: string; key: string; attempt: number; found: string }[] = [];
  /** Gates a write waits at before it takes effect; opened with "go" (it takes effect) or "fail" (it dies first). */
  readonly writeGates = new Map<string, { promise: Promise<"go" | "fail">; open: (how: "go" | "fail") => void }>();

  writeGate(name: string): (how: "go" | "fail") => void {
    let resolve!: (how: "go" | "fail") => void;
    const promise = new Promise<"go" | "fail">((r) => (resolve = r));
    // Once opened, the gate is gone: a later execution (a rerun) does not wait at it.
    const open = (how: "go" | "fail") => {
      this.writeGates.delete(name);
      resolve(how);
    };
    this.writeGates.set(name, { promise, open });
    return open;
  }

  /**
   * A `reconcile` that asks the ledger, as a payment provider is asked for the charge with a key:
   * `done` with what the write recorded; `unknown` while an execution with this key is still in
   * flight (the provider says "processing"); otherwise `not_done`. It throws while fewer checks of
   * this key were made than the call's `failing_checks` argument (the ledger is unreachable).
   */
  reconcileFor(tool: string): NonNullable<ToolPolicy["reconcile"]> {
    return ({ idempotencyKey, arguments: args, attempt }) => {
      const made = this.checks.filter((c) => c.key === idempotencyKey).length;
      const failing = Number((args as Record<string, unknown>)?.failing_checks ?? 0);
      const record = (found: string) => this.checks.push({ tool, key: idempotencyKey, attempt, found });
      if (made < failing) {
        record("threw");
        throw new Error(`the ${tool} ledger is unreachable (check ${made + 1})`);
      }
      const entry = this.ledger.get(idempotencyKey);
      if (entry !== undefined) {
        record("done");
        return { status: "done", output: entry };
      }
      const inFlight = this.executions.some(
        (e) => e.tool === tool && e.key === idempotencyKey && e.endedAt === undefined,
      );
      record(inFlight ? "unknown" : "not_done");
      return { status: inFlight ? "unknown" : "not_done" };
    };
  }

  /** Executions of `tool` under one idempotency key. */
  runsOf(tool: string, key: string): Execution[] {
    return this.executions.filter((e) => e.tool === tool && e.key === key);
  }

  gate(name: string): () => void {
    let open!: () => void;
    const promise = new Promise<void>((resolve) => (open = resolve));
    this.gates.set(name, { promise, open });
    return open;
  }

  /** Waits until the current call's abort signal fires ("aborted") or the named gate opens ("opened"). */
  abortedOrOpened(name: string): Promise<"aborted" | "opened"> {
    const signal = currentToolCall()?.signal;
    const gate = this.gates.get(name);
    return new Promise((resolve) => {
      if (signal?.aborted) return resolve("aborted");
      signal?.addEventListener("abort", () => resolve("aborted"), { once: true });
      void gate?.promise.then(() => resolve("opened"));
    });
  }

  count(tool: string): number {
    return this.executions.filter((e) => e.tool === tool).length;
  }

  private record(tool: string, variant: ToolVariant, args: Record<string, unknown>): Execution {
    const call = currentToolCall();
    const execution: Execution = {
      tool,
      variant,
      args,
      key: call?.idempotencyKey,
      attempt: call?.attempt,
      sessionId: call?.sessionId,
      startedAt: Date.now(),
    };
    this.executions.push(execution);
    return execution;
  }

  tools(variant: ToolVariant = "v1"): ConformanceTool[] {
    const box = this;
    const tool = (
      name: string,
      parameters: ConformanceTool["parameters"],
      body: (args: Record<string, unknown>, execution: Execution) => Promise<string> | string,
      extra: Partial<ConformanceTool> = {},
    ): ConformanceTool => ({
      name,
      description: `The ${name.replaceAll("_", " ")} tool of the conformance suite.`,
      parameters,
      ...extra,
      async execute(args) {
        const execution = box.record(name, variant, args);
        try {
          return await body(args, execution);
        } finally {
          execution.endedAt = Date.now();
        }
      },
    });
    return [
      tool("look_up_order", { order_id: "string" }, async (args) => {
        const gate = box.gates.get(`look_up_order:${String(args.order_id)}`);
        if (gate) await gate.promise;
        return `order ${String(args.order_id)} is shipped`;
      }),
      tool(
        "cancel_order",
        variant === "reason" ? { order_id: "string", reason: "string" } : { order_id: "string" },
        async (args) => {
          const gate = box.gates.get("cancel_order");
          if (gate) await gate.promise;
          const why = variant === "reason" ? ` (${String(args.reason)})` : "";
          return `order ${String(args.order_id)} is cancelled${why}`;
        },
      ),
      ...(variant === "extra"
        ? [tool("look_up_invoice", { invoice_id: "string" }, (args) => `invoice ${String(args.invoice_id)} is paid`)]
        : []),
      tool("flaky_read", { key: "string", failures: "number" }, (args) => {
        const id = `${currentToolCall()?.idempotencyKey}`;
        const left = box.failuresLeft.get(id) ?? Number(args.failures);
        box.failuresLeft.set(id, left - 1);
        if (left > 0) throw new Error(`flaky_read is down (${left} failure(s) to go)`);
        return `value of ${String(args.key)}`;
      }),
      tool("charge_card", { amount: "number" }, () => {
        throw new Error("the payment service timed out");
      }),
      tool("send_email", { to: "string" }, () => {
        throw new Error("the mail server dropped the connection");
      }),
      tool("find_customer", { email: "string" }, (args) => {
        throw new ToolExecutionError(`no customer has the email ${String(args.email)}`);
      }),
      tool("slow_step", { label: "string" }, async (args) => {
        await new Promise((resolve) => setTimeout(resolve, 20));
        return `step ${String(args.label)} done`;
      }),
      // Turn control: tools that react to their abort signal in each of the ways a tool can.
      tool("wait_read", { key: "string" }, async (args) => {
        if ((await box.abortedOrOpened("wait_read")) === "aborted") throw new Error("wait_read stopped on its signal");
        return `value of ${String(args.key)}`;
      }),
      tool("finish_write", { id: "string" }, async (args) => {
        await box.abortedOrOpened("finish_write");
        return `wrote ${String(args.id)} before stopping`;
      }),
      tool("ignore_write", { id: "string" }, async (args) => {
        const gate = box.gates.get("ignore_write");
        if (gate) await gate.promise;
        return `wrote ${String(args.id)} late`;
      }),
      tool("stop_write", { id: "string" }, async (args) => {
        if ((await box.abortedOrOpened("stop_write")) === "aborted")
          throw new ToolCancelledError(`stopped before writing ${String(args.id)}`);
        return `wrote ${String(args.id)}`;
      }),
      // Reconciliation: writes that record their effect in the ledger their `reconcile` reads.
      tool("refund", { order_id: "string", failing_checks: "number" }, async (args) => {
        const key = String(currentToolCall()?.idempotencyKey);
        const gate = box.writeGates.get(`refund:${String(args.order_id)}`);
        if (gate && (await gate.promise) === "fail") throw new Error("the refund service dropped the connection");
        const output = `refunded order ${String(args.order_id)}`;
        box.ledger.set(key, output);
        // Past its effect: a call held here and then lost took effect.
        const after = box.gates.get(`refund-after:${String(args.order_id)}`);
        if (after) await after.promise;
        return output;
      }),
      tool("transfer", { id: "string", failures: "number" }, (args) => {
        const key = String(currentToolCall()?.idempotencyKey);
        const left = box.failuresLeft.get(key) ?? Number(args.failures);
        box.failuresLeft.set(key, left - 1);
        if (left > 0) throw new Error(`the bank timed out (${left} failure(s) to go)`);
        const output = `transferred ${String(args.id)}`;
        box.ledger.set(key, output);
        return output;
      }),
      tool("post_letter", { to: "string", failures: "number" }, (args) => {
        const key = String(currentToolCall()?.idempotencyKey);
        const left = box.failuresLeft.get(key) ?? Number(args.failures);
        box.failuresLeft.set(key, left - 1);
        if (left > 0) throw new Error("the post office lost the receipt");
        return `letter to ${String(args.to)} posted`;
      }),
    ];
  }
}

const policiesFor = (box: ToolBox): ToolPolicies => ({
  look_up_order: { effect: "read" },
  cancel_order: { effect: "non_idempotent_write" },
  flaky_read: { effect: "read" },
  charge_card: { effect: "idempotent_write" },
  send_email: { effect: "non_idempotent_write", needsApproval: false },
  find_customer: { effect: "read" },
  slow_step: { effect: "read" },
  wait_read: { effect: "read" },
  finish_write: { effect: "non_idempotent_write", needsApproval: false },
  ignore_write: { effect: "non_idempotent_write", needsApproval: false },
  stop_write: { effect: "unclassified", needsApproval: false },
  refund: { effect: "non_idempotent_write", needsApproval: false, reconcile: box.reconcileFor("refund") },
  transfer: { effect: "idempotent_write", reconcile: box.reconcileFor("transfer") },
  post_letter: { effect: "non_idempotent_write", needsApproval: false },
});

/** The suite's grace period for calls in flight when a turn is cancelled. */
const cancelGraceMs = 1_000;

/**
 * The lease TTL of a worker that a scenario kills. The next worker takes the session over once this
 * lease has expired, so the TTL sets how long the takeover waits. The worker renews every third of
 * it, so its lease lasts through a stall of about two thirds of it (on a busy machine) before the
 * kill. If the lease lapsed early, the doomed worker would take the session again and run its steps
 * a second time. The worker that takes over keeps the suite's default TTL (5 s): if it lost its
 * lease while it drives, it would redo a step, and the scenario's exact counts of attempts, checks
 * and steps would be off.
 */
const dyingLeaseTtlMs = 1_000;

const waitUntil = async (what: string, check: () => boolean | Promise<boolean>, timeoutMs = 20_000) => {
  const deadline = Date.now() + timeoutMs;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
};

let nonces = 0;
/** Makes a scenario's message unique in the process (the scripted models count hung calls by message). */
const nonce = () => `${process.pid}-${Date.now()}-${++nonces}`;

/** The receipt of a cancelled turn, once its `turn_cancelled` event is stored. */
const receiptOf = async (env: Env, sessionId: string, turnId: string) => {
  let receipt: Extract<SessionEvent, { type: "turn_cancelled" }>["data"] | undefined;
  await waitUntil(`the receipt of ${turnId}`, async () => {
    const event = (await env.client.readEvents(sessionId)).find(
      (e) => e.type === "turn_cancelled" && e.data.turnId === turnId,
    );
    if (event?.type === "turn_cancelled") receipt = event.data;
    return receipt !== undefined;
  });
  return receipt!;
};

const callOf = (snapshot: SessionSnapshot, name: string): ToolCallRecord => {
  const call = snapshot.turn?.calls.find((c) => c.name === name);
  assert.ok(call, `the turn has a ${name} call`);
  return call;
};

/** Core's `Worker` as the suite drives it: its death and its drive count come from the `/testing` helpers. */
const coreWorker = (worker: Worker): ConformanceWorker => ({
  start: () => worker.start(),
  stop: (options) => worker.stop(options),
  crash: () => crashWorker(worker),
  get drives() {
    return workerDrives(worker);
  },
});

export function sessionConformance(t: TestApi, options: SessionConformanceOptions): void {
  const live: (() => Promise<void>)[] = [];
  const setup = async (box: ToolBox, workers = 1): Promise<Env> => {
    const { store, cleanup } = await options.makeStore();
    const defineVersion = async (variant: ToolVariant, migrations?: SessionDefinitionOptions["migrations"]) =>
      defineSession({
        name: "conformance",
        runner: await options.makeRunner(box.tools(variant)),
        policies: variant === "extra" ? { ...policiesFor(box), look_up_invoice: { effect: "read" } } : policiesFor(box),
        modelRetry: { maxAttempts: 3, initialDelayMs: 5, maxDelayMs: 20 },
        toolBackoff: { initialDelayMs: 5, maxDelayMs: 20 },
        cancelGraceMs,
        ...(migrations ? { migrations } : {}),
      });
    const definition = await defineVersion("v1");
    const started: ConformanceWorker[] = [];
    const env: Env = {
      store,
      client: new SessionClient({ store }),
      definition,
      workers: started,
      defineVersion,
      startWorker(o = {}) {
        const settings = {
          store,
          definition: o.definition ?? definition,
          pollIntervalMs: 25,
          leaseTtlMs: o.leaseTtlMs ?? 5_000,
          concurrency: o.concurrency ?? 16,
          definitionCheckIntervalMs: 50,
        };
        const worker = options.makeWorker
          ? options.makeWorker(settings)
          : coreWorker(
              new Worker({
                store,
                sessions: [settings.definition],
                pollIntervalMs: settings.pollIntervalMs,
                leaseTtlMs: settings.leaseTtlMs,
                concurrency: settings.concurrency,
                definitionCheckIntervalMs: settings.definitionCheckIntervalMs,
                onError: () => {},
              }),
            );
        worker.start();
        started.push(worker);
        return worker;
      },
    };
    for (let i = 0; i < workers; i++) env.startWorker();
    live.push(async () => {
      await Promise.all(started.map((w) => w.stop({ timeoutMs: 2_000 })));
      await store.close();
      await cleanup?.();
    });
    return env;
  };
  const teardown = async () => {
    const all = live.splice(0);
    for (const stop of all) await stop();
  };
  t.afterEach?.(teardown);

  const scenario = (name: string, body: (box: ToolBox) => Promise<void>) =>
    (options.scenarios?.(name) ?? true) &&
    // An engine that does not pin sessions to its workers' definitions declares it (with the reason).
    !(name.startsWith("pinning:") && options.pinning?.supported === false) &&
    t.it(
      name,
      async () => {
        try {
          await body(new ToolBox());
        } finally {
          if (!t.afterEach) await teardown();
        }
      },
      60_000,
    );

  const turnSteps = async (env: Env, sessionId: string, turnId: string) =>
    (await env.client.steps(sessionId))
      .filter((s) => s.turnId === turnId)
      .map((s) => (s.step === "AwaitToolApproval" ? `${s.step}:${s.detail}` : s.step));

  t.describe("session conformance", () => {
    scenario("a turn that looks up an order runs RunModel, CallTool, ResumeTurn, RunModel", async (box) => {
      const env = await setup(box);
      const { sessionId } = await env.client.startSession({
        agent: "conformance",
        message: 'call look_up_order {"order_id":"1001"}',
      });
      const snapshot = await env.client.waitUntilIdle(sessionId);
      assert.equal(snapshot.status, "idle");
      assert.deepEqual(await turnSteps(env, sessionId, "turn-1"), ["RunModel", "CallTool", "ResumeTurn", "RunModel"]);
      assert.equal(box.count("look_up_order"), 1);
      assert.equal(callOf(snapshot, "look_up_order").status, "succeeded");
      assert.equal(snapshot.turn?.finalText, "Results: look_up_order -> order 1001 is shipped");
      assert.equal(snapshot.messages[0]?.role, "user");
      assert.equal(snapshot.messages.at(-1)?.text, "Results: look_up_order -> order 1001 is shipped");
      assert.equal(snapshot.usage.modelCalls, 2);
    });

    scenario("a non-idempotent call waits for approval and runs once after it", async (box) => {
      const env = await setup(box);
      const { sessionId } = await env.client.startSession({
        agent: "conformance",
        message: 'call cancel_order {"order_id":"1002"}',
      });
      const waiting = await env.client.waitUntilIdle(sessionId);
      assert.equal(waiting.status, "awaiting_approval");
      assert.equal(waiting.pendingInterrupts.length, 1);
      assert.equal(waiting.pendingInterrupts[0]?.toolName, "cancel_order");
      assert.equal(box.count("cancel_order"), 0, "nothing runs before the approval");
      await env.client.approve(sessionId, waiting.pendingInterrupts[0]!.interruptId);
      const done = await env.client.waitUntilIdle(sessionId);
      assert.equal(done.status, "idle");
      assert.equal(box.count("cancel_order"), 1);
      assert.equal(callOf(done, "cancel_order").status, "succeeded");
      assert.deepEqual(await turnSteps(env, sessionId, "turn-1"), [
        "RunModel",
        "AwaitToolApproval:approved",
        "CallSingleAttemptTool",
        "ResumeTurn",
        "RunModel",
      ]);
      assert.match(done.turn?.finalText ?? "", /order 1002 is cancelled/);
    });

    scenario("a rejection's message reaches the model and the tool never runs", async (box) => {
      const env = await setup(box);
      const { sessionId } = await env.client.startSession({
        agent: "conformance",
        message: 'call cancel_order {"order_id":"1002"}',
      });
      const waiting = await env.client.waitUntilIdle(sessionId);
      await env.client.reject(
        sessionId,
        waiting.pendingInterrupts[0]!.interruptId,
        "Not today: the customer called back.",
      );
      const done = await env.client.waitUntilIdle(sessionId);
      assert.equal(box.count("cancel_order"), 0);
      assert.equal(callOf(done, "cancel_order").status, "rejected");
      assert.equal(done.turn?.finalText, "Results: cancel_order -> Not today: the customer called back.");
    });

    scenario("two calls of one response run in parallel, each in its own step", async (box) => {
      const env = await setup(box);
      const openA = box.gate("look_up_order:A");
      const openB = box.gate("look_up_order:B");
      const { sessionId } = await env.client.startSession({
        agent: "conformance",
        message: 'call look_up_order {"order_id":"A"}\ncall look_up_order {"order_id":"B"}',
      });
      // Both calls must be running at once: neither may finish before the other started.
      await waitUntil("both calls to start", () => box.count("look_up_order") === 2);
      openB();
      openA();
      const done = await env.client.waitUntilIdle(sessionId);
      assert.deepEqual(await turnSteps(env, sessionId, "turn-1"), [
        "RunModel",
        "CallTool",
        "CallTool",
        "ResumeTurn",
        "RunModel",
      ]);
      assert.equal(
        done.turn?.finalText,
        "Results: look_up_order -> order A is shipped | look_up_order -> order B is shipped",
      );
    });

    scenario("a read that fails twice then succeeds; one that fails three times is failed", async (box) => {
      const env = await setup(box);
      const { sessionId } = await env.client.startSession({
        agent: "conformance",
        message: 'call flaky_read {"key":"a","failures":2}\ncall flaky_read {"key":"b","failures":3}',
      });
      const done = await env.client.waitUntilIdle(sessionId);
      const [a, b] = done.turn!.calls;
      assert.equal(a?.status, "succeeded");
      assert.equal(a?.attempts, 3);
      assert.equal(b?.status, "failed");
      assert.equal(b?.attempts, 3);
      assert.match(b?.message ?? "", /all 3 attempts failed/);
      assert.equal(box.count("flaky_read"), 6);
      assert.match(done.turn?.finalText ?? "", /flaky_read -> value of a \| flaky_read -> The tool call failed/);
    });

    scenario("an idempotent write sees one key on every attempt and ends outcome_unknown", async (box) => {
      const env = await setup(box);
      const { sessionId } = await env.client.startSession({
        agent: "conformance",
        message: 'call charge_card {"amount":5}',
      });
      const done = await env.client.waitUntilIdle(sessionId);
      const call = callOf(done, "charge_card");
      assert.equal(call.status, "outcome_unknown");
      assert.equal(call.attempts, 3);
      const runs = box.executions.filter((e) => e.tool === "charge_card");
      assert.deepEqual(
        runs.map((e) => e.attempt),
        [1, 2, 3],
      );
      assert.deepEqual(new Set(runs.map((e) => e.key)), new Set([`${sessionId}/turn-1/${call.toolCallId}`]));
      assert.match(done.turn?.finalText ?? "", /charge_card -> The outcome of this tool call is unknown/);
    });

    scenario("a single-attempt call that throws is outcome_unknown and runs once", async (box) => {
      const env = await setup(box);
      const { sessionId } = await env.client.startSession({
        agent: "conformance",
        message: 'call send_email {"to":"a@example.com"}',
      });
      const done = await env.client.waitUntilIdle(sessionId);
      assert.equal(callOf(done, "send_email").status, "outcome_unknown");
      assert.equal(box.count("send_email"), 1);
    });

    scenario("ToolExecutionError is failed without a retry", async (box) => {
      const env = await setup(box);
      const { sessionId } = await env.client.startSession({
        agent: "conformance",
        message: 'call find_customer {"email":"x@example.com"}',
      });
      const done = await env.client.waitUntilIdle(sessionId);
      const call = callOf(done, "find_customer");
      assert.equal(call.status, "failed");
      assert.equal(call.attempts, 1);
      assert.equal(box.count("find_customer"), 1);
      assert.match(done.turn?.finalText ?? "", /no customer has the email x@example.com/);
    });

    scenario("invalid arguments are failed and the tool does not run", async (box) => {
      const env = await setup(box);
      const { sessionId } = await env.client.startSession({
        agent: "conformance",
        message: 'call look_up_order {"order":1001}',
      });
      const done = await env.client.waitUntilIdle(sessionId);
      assert.equal(callOf(done, "look_up_order").status, "failed");
      assert.equal(box.count("look_up_order"), 0);
      assert.match(done.turn?.finalText ?? "", /look_up_order -> The tool call failed/);
    });

    scenario("a worker dying inside a single-attempt call: outcome_unknown, never run again", async (box) => {
      const env = await setup(box, 0);
      const first = env.startWorker({ leaseTtlMs: dyingLeaseTtlMs });
      box.gate("cancel_order");
      const { sessionId } = await env.client.startSession({
        agent: "conformance",
        message: 'call cancel_order {"order_id":"1002"}',
      });
      const waiting = await env.client.waitUntilIdle(sessionId);
      await env.client.approve(sessionId, waiting.pendingInterrupts[0]!.interruptId);
      await waitUntil("the call to start", () => box.count("cancel_order") === 1);
      first.crash();
      const second = env.startWorker();
      const done = await env.client.waitUntilIdle(sessionId);
      box.gates.get("cancel_order")!.open();
      const unknown = callOf(done, "cancel_order");
      assert.equal(unknown.status, "outcome_unknown");
      assert.equal(unknown.reconcileAttempts, 0, "a tool without reconcile is not checked");
      assert.match(done.turn?.finalText ?? "", /cancel_order -> The outcome of this tool call is unknown/);
      // A person is asked: a durable attention interrupt, with what they need to check.
      assert.deepEqual(
        done.pendingInterrupts.map((i) => [i.kind, i.toolName, i.toolCallId, i.idempotencyKey]),
        [["attention", "cancel_order", unknown.toolCallId, unknown.idempotencyKey]],
      );
      // Past the points where the call could run again or the dead worker could write: the dead
      // worker's call has returned, its drive has ended, and so has the drive that ended the turn.
      await waitUntil(
        "the dead worker's call to return and both workers' drives to end",
        () =>
          box.executions.every((e) => e.tool !== "cancel_order" || e.endedAt !== undefined) &&
          first.drives > 0 &&
          second.drives > 0,
      );
      assert.equal(box.count("cancel_order"), 1, "the call is never executed again");
      assert.equal(
        (await env.client.snapshot(sessionId)).turn?.finalText,
        done.turn?.finalText,
        "the dead worker wrote nothing",
      );
    });

    scenario("a worker dying inside a read call: the read runs again", async (box) => {
      const env = await setup(box, 0);
      const first = env.startWorker({ leaseTtlMs: dyingLeaseTtlMs });
      const open = box.gate("look_up_order:7");
      const { sessionId } = await env.client.startSession({
        agent: "conformance",
        message: 'call look_up_order {"order_id":"7"}',
      });
      await waitUntil("the call to start", () => box.count("look_up_order") === 1);
      first.crash();
      open();
      env.startWorker();
      const done = await env.client.waitUntilIdle(sessionId);
      const call = callOf(done, "look_up_order");
      assert.equal(call.status, "succeeded");
      assert.equal(call.attempts, 2);
      assert.equal(box.count("look_up_order"), 2);
      assert.equal(done.turn?.finalText, "Results: look_up_order -> order 7 is shipped");
    });

    scenario("messages sent during a turn start the next turns, in order", async (box) => {
      const env = await setup(box);
      const open = box.gate("look_up_order:1");
      const { sessionId } = await env.client.startSession({
        agent: "conformance",
        message: 'call look_up_order {"order_id":"1"}',
      });
      await waitUntil("the first call to start", () => box.count("look_up_order") === 1);
      await env.client.sendMessage(sessionId, "second");
      await env.client.sendMessage(sessionId, "third");
      await env.client.waitFor(sessionId, (s) => s.turn?.turnId === "turn-1" && s.queuedMessages === 2);
      open();
      const done = await env.client.waitUntilIdle(sessionId);
      assert.equal(done.turnCount, 3);
      const users = done.messages.filter((m) => m.role === "user").map((m) => m.text);
      assert.deepEqual(users, ['call look_up_order {"order_id":"1"}', "second", "third"]);
      assert.equal(done.messages.at(-1)?.text, "You said: third");
      const queued = (await env.client.readEvents(sessionId)).filter((e) => e.type === "message_queued");
      assert.equal(queued.length, 2);
    });

    scenario("a message sent twice with one messageId starts one turn", async (box) => {
      const env = await setup(box);
      const { sessionId } = await env.client.startSession({ agent: "conformance" });
      const first = await env.client.sendMessage(sessionId, "hello", { messageId: "m-1" });
      const again = await env.client.sendMessage(sessionId, "hello", { messageId: "m-1" });
      assert.equal(again.duplicate, true);
      assert.equal(again.seq, first.seq);
      const done = await env.client.waitUntilIdle(sessionId);
      assert.equal(done.turnCount, 1);
    });

    scenario("a failed turn leaves a note that the next turn's model sees", async (box) => {
      const env = await setup(box);
      const { sessionId } = await env.client.startSession({
        agent: "conformance",
        message: 'call look_up_order {"order_id":"9"}\nthen\nfail model',
      });
      const failed = await env.client.waitUntilIdle(sessionId);
      assert.equal(failed.turn?.phase, "failed");
      assert.match(failed.turn?.error ?? "", /failed 3 time/);
      const note = failed.messages.at(-1);
      assert.equal(note?.role, "note");
      assert.match(note?.text ?? "", /look_up_order\(\{"order_id":"9"\}\): succeeded: order 9 is shipped/);
      await env.client.sendMessage(sessionId, "what happened?");
      const next = await env.client.waitUntilIdle(sessionId);
      assert.equal(next.turn?.finalText, "(noted 1 failed turn(s)) You said: what happened?");
      const events = await env.client.readEvents(sessionId);
      assert.equal(events.filter((e) => e.type === "turn_failed").length, 1);
    });

    scenario("two workers racing: one session is advanced by one worker at a time", async (box) => {
      const env = await setup(box, 0);
      env.startWorker({ concurrency: 1 });
      env.startWorker({ concurrency: 1 });
      const ids: string[] = [];
      for (let i = 0; i < 6; i++) {
        const { sessionId } = await env.client.startSession({
          agent: "conformance",
          message: `call slow_step {"label":"${i}a"}\nthen\ncall slow_step {"label":"${i}b"}`,
        });
        ids.push(sessionId);
      }
      for (const id of ids) assert.equal((await env.client.waitUntilIdle(id)).turn?.phase, "completed");
      const runs = box.executions.filter((e) => e.tool === "slow_step");
      assert.equal(runs.length, 12, "every call ran exactly once");
      for (const id of ids) {
        const mine = runs.filter((e) => e.sessionId === id).sort((x, y) => x.startedAt - y.startedAt);
        assert.equal(mine.length, 2);
        assert.ok(mine[0]!.endedAt! <= mine[1]!.startedAt, "the steps of one session never overlap");
      }
      assert.ok(
        env.workers.every((w) => w.drives > 0),
        "both workers took part",
      );
      // The workers really raced: each drives one session at a time, so two calls of different
      // sessions running at the same moment ran in different workers.
      const sideBySide = runs.filter((x) =>
        runs.some((y) => y.sessionId !== x.sessionId && x.startedAt < y.endedAt! && y.startedAt < x.endedAt!),
      );
      assert.ok(sideBySide.length > 1, "calls of the two workers ran at the same time");
    });

    scenario("an event reader that reconnects from its cursor misses nothing and sees nothing twice", async (box) => {
      const env = await setup(box);
      const { sessionId } = await env.client.startSession({ agent: "conformance" });
      const seen: SessionEvent[] = [];
      const first = new AbortController();
      const reading = (async () => {
        for await (const event of env.client.followEvents(sessionId, { signal: first.signal })) {
          seen.push(event);
          if (seen.length === 3) first.abort();
        }
      })();
      await env.client.sendMessage(sessionId, 'call look_up_order {"order_id":"5"}');
      await reading;
      const second = new AbortController();
      const resumed = (async () => {
        for await (const event of env.client.followEvents(sessionId, {
          after: seen.at(-1)!.seq,
          signal: second.signal,
        })) {
          seen.push(event);
          if (event.type === "turn_completed") second.abort();
        }
      })();
      await resumed;
      const all = await env.client.readEvents(sessionId);
      assert.deepEqual(
        seen.map((e) => e.seq),
        all.map((e) => e.seq),
      );
      assert.deepEqual(
        seen.map((e) => e.seq),
        all.map((_, i) => i + 1),
      );
    });

    scenario("text deltas are coalesced and join to the final text", async (box) => {
      const env = await setup(box);
      const long = Array.from({ length: 30 }, (_, i) => `word${i}`).join(" ");
      const { sessionId } = await env.client.startSession({ agent: "conformance", message: long });
      const done = await env.client.waitUntilIdle(sessionId);
      const deltas = (await env.client.readEvents(sessionId)).filter((e) => e.type === "text_delta");
      const joined = deltas.map((e) => (e.type === "text_delta" ? e.data.text : "")).join("");
      assert.equal(joined, done.turn?.finalText);
      assert.ok(deltas.length >= 2, "long text streams in several events");
      assert.ok(
        deltas.length <= Math.ceil(joined.length / 64) + 2,
        `deltas are coalesced (${deltas.length} events for ${joined.length} chars)`,
      );
    });

    scenario(
      "cancel during a model call: the call is aborted, the receipt is empty, the next turn is told",
      async (box) => {
        const env = await setup(box);
        const text = `hang model\n(a model call to stop, ${nonce()})`;
        const { sessionId } = await env.client.startSession({ agent: "conformance", message: text });
        await waitUntil("the model call to start", () => scriptedHangs(text).started === 1);
        const accepted = await env.client.cancelTurn(sessionId, {
          reason: "the user pressed stop",
          requestId: "stop-1",
        });
        assert.equal(accepted.turnId, "turn-1");
        assert.equal(accepted.duplicate, false);
        const receipt = await receiptOf(env, sessionId, "turn-1");
        assert.equal(receipt.modelCallAborted, true);
        assert.deepEqual(receipt.calls, []);
        assert.equal(receipt.reason, "the user pressed stop");
        assert.equal(receipt.requestId, "stop-1");
        await waitUntil("the model to see its abort signal", () => scriptedHangs(text).aborted === 1);
        const done = await env.client.waitUntilIdle(sessionId);
        assert.equal(done.turn?.phase, "cancelled");
        assert.equal(done.status, "idle");
        const note = done.messages.at(-1);
        assert.equal(note?.role, "note");
        assert.match(note?.text ?? "", /cancelled by a person \(reason: the user pressed stop\)/);
        assert.match(note?.text ?? "", /model call in flight was stopped/);
        assert.ok(
          (await env.client.steps(sessionId)).some((s) => s.step === "RunModel" && s.detail === "cancelled"),
          "the step log shows the model step cancelled",
        );
        await env.client.sendMessage(sessionId, "and now?");
        const next = await env.client.waitFor(sessionId, (s) => s.turnCount === 2 && s.status === "idle");
        assert.equal(next.turn?.finalText, "(noted 1 cancelled turn(s)) You said: and now?");
        assert.equal(scriptedHangs(text).started, 1, "the cancelled model call was not made again");
      },
    );

    scenario(
      "cancel during parallel calls: each call in flight ends by its effect and the grace period",
      async (box) => {
        const env = await setup(box);
        for (const name of ["wait_read", "finish_write", "ignore_write", "stop_write"]) box.gate(name);
        const { sessionId } = await env.client.startSession({
          agent: "conformance",
          message: [
            'call wait_read {"key":"k"}',
            'call finish_write {"id":"w1"}',
            'call ignore_write {"id":"w2"}',
            'call stop_write {"id":"w3"}',
          ].join("\n"),
        });
        await waitUntil("all four calls to start", () =>
          ["wait_read", "finish_write", "ignore_write", "stop_write"].every((name) => box.count(name) === 1),
        );
        await env.client.cancelTurn(sessionId);
        const receipt = await receiptOf(env, sessionId, "turn-1");
        const statusOf = Object.fromEntries(receipt.calls.map((c) => [c.name, c.status]));
        assert.deepEqual(statusOf, {
          wait_read: "cancelled",
          finish_write: "succeeded",
          ignore_write: "outcome_unknown",
          stop_write: "cancelled",
        });
        assert.ok(receipt.calls.every((c) => c.attempts === 1));
        assert.equal(receipt.modelCallAborted, false);
        const events = await env.client.readEvents(sessionId);
        const cancelling = events.find((e) => e.type === "turn_cancelling");
        assert.ok(cancelling?.type === "turn_cancelling", "a turn_cancelling event came first");
        assert.equal(cancelling.data.running.length, 4, "all four were running when the cancellation was applied");
        // The call that ignored its signal returns after the receipt: its late result changes nothing.
        box.gates.get("ignore_write")!.open();
        await waitUntil("ignore_write to return", () =>
          box.executions.every((e) => e.tool !== "ignore_write" || e.endedAt !== undefined),
        );
        const done = await env.client.waitUntilIdle(sessionId);
        assert.equal(callOf(done, "ignore_write").status, "outcome_unknown");
        assert.equal(callOf(done, "finish_write").output, "wrote w1 before stopping");
        for (const name of ["wait_read", "finish_write", "ignore_write", "stop_write"])
          assert.equal(box.count(name), 1, `${name} ran once and was never retried`);
        const note = done.messages.at(-1)?.text ?? "";
        assert.match(note, /ignore_write\(\{"id":"w2"\}\): outcome_unknown/);
        assert.match(note, /finish_write\(\{"id":"w1"\}\): succeeded: wrote w1 before stopping/);
        for (const name of ["wait_read", "finish_write", "stop_write"]) box.gates.get(name)!.open();
      },
    );

    scenario("cancel while waiting for approval: the call never runs and a late decision is refused", async (box) => {
      const env = await setup(box);
      const { sessionId } = await env.client.startSession({
        agent: "conformance",
        message: 'call cancel_order {"order_id":"77"}',
      });
      const waiting = await env.client.waitUntilIdle(sessionId);
      const interruptId = waiting.pendingInterrupts[0]!.interruptId;
      await env.client.cancelTurn(sessionId, { reason: "not this one" });
      const receipt = await receiptOf(env, sessionId, "turn-1");
      assert.deepEqual(
        receipt.calls.map((c) => [c.name, c.status, c.attempts]),
        [["cancel_order", "cancelled", 0]],
      );
      const before = await env.client.waitUntilIdle(sessionId);
      assert.deepEqual(before.pendingInterrupts, []);
      const inboxBefore = await env.store.readInbox(sessionId, 0);
      await assert.rejects(() => env.client.approve(sessionId, interruptId), SessionStateError.isInstance);
      await assert.rejects(() => env.client.reject(sessionId, interruptId, "no"), SessionStateError.isInstance);
      assert.deepEqual(await env.client.snapshot(sessionId), before, "the late decisions changed nothing");
      assert.deepEqual(await env.store.readInbox(sessionId, 0), inboxBefore, "nothing was written to the inbox");
      assert.equal(box.count("cancel_order"), 0, "the tool never ran");
      assert.ok(
        (await env.client.steps(sessionId)).some((s) => s.step === "AwaitToolApproval" && s.detail === "cancelled"),
      );
    });

    scenario(
      "decisions around a cancellation: applied first, a duplicate; after it, refused even turns later",
      async (box) => {
        const env = await setup(box, 0);
        const { sessionId } = await env.client.startSession({
          agent: "conformance",
          message: 'call cancel_order {"order_id":"A"}\ncall cancel_order {"order_id":"B"}',
        });
        const worker = env.startWorker();
        const waiting = await env.client.waitUntilIdle(sessionId);
        const [first, second] = waiting.pendingInterrupts.map((i) => i.interruptId);
        await worker.stop();
        // With no worker running, the first approval and then the cancellation wait in the inbox in that order.
        await env.client.approve(sessionId, first!);
        await env.client.cancelTurn(sessionId);
        await assert.rejects(() => env.client.approve(sessionId, first!), DuplicateResolutionError.isInstance);
        await assert.rejects(() => env.client.approve(sessionId, second!), SessionStateError.isInstance);
        await env.client.sendMessage(sessionId, "next");
        env.startWorker();
        const done = await env.client.waitFor(sessionId, (s) => s.turnCount === 2 && s.status === "idle");
        const receipt = await receiptOf(env, sessionId, "turn-1");
        // The approved call is cancelled if the engine applied the approval and the cancellation together,
        // or ran (and kept its outcome) if it started in between; the other call never ran.
        const [a, b] = receipt.calls;
        assert.equal(b?.status, "cancelled");
        assert.equal(a?.status, box.count("cancel_order") === 1 ? "succeeded" : "cancelled");
        await assert.rejects(() => env.client.approve(sessionId, second!), SessionStateError.isInstance);
        await assert.rejects(() => env.client.approve(sessionId, first!), DuplicateResolutionError.isInstance);
        assert.deepEqual(await env.client.snapshot(sessionId), done, "the refusals changed nothing");
      },
    );

    scenario("a cancellation accepted while its worker is dead is applied by the next worker", async (box) => {
      const env = await setup(box, 0);
      const first = env.startWorker({ leaseTtlMs: dyingLeaseTtlMs });
      box.gate("wait_read");
      box.gate("ignore_write");
      const { sessionId } = await env.client.startSession({
        agent: "conformance",
        message: 'call wait_read {"key":"c"}\ncall ignore_write {"id":"c1"}',
      });
      await waitUntil("both calls to start", () => box.count("wait_read") === 1 && box.count("ignore_write") === 1);
      first.crash();
      await env.client.cancelTurn(sessionId, { requestId: "after-crash" });
      const accepted = await env.client.snapshot(sessionId);
      assert.equal(accepted.turn?.phase, "tools", "no worker applied the cancellation yet");
      env.startWorker();
      const receipt = await receiptOf(env, sessionId, "turn-1");
      const statusOf = Object.fromEntries(receipt.calls.map((c) => [c.name, c.status]));
      assert.deepEqual(statusOf, { wait_read: "cancelled", ignore_write: "outcome_unknown" });
      box.gates.get("ignore_write")!.open();
      box.gates.get("wait_read")!.open();
      await waitUntil("the dead worker's calls to return", () => box.executions.every((e) => e.endedAt !== undefined));
      assert.equal(box.count("wait_read"), 1, "the read was not run again after the crash");
      assert.equal(box.count("ignore_write"), 1, "the single-attempt call was not run again");
      const done = await env.client.waitUntilIdle(sessionId);
      assert.equal(done.turn?.phase, "cancelled");
    });

    scenario("a duplicate cancel with one requestId is accepted once, also after the turn ended", async (box) => {
      const env = await setup(box);
      const text = `hang model\n(a duplicate stop, ${nonce()})`;
      const { sessionId } = await env.client.startSession({ agent: "conformance", message: text });
      await waitUntil("the model call to start", () => scriptedHangs(text).started === 1);
      const first = await env.client.cancelTurn(sessionId, { requestId: "stop-twice" });
      const again = await env.client.cancelTurn(sessionId, { requestId: "stop-twice" });
      assert.equal(again.duplicate, true);
      assert.equal(again.seq, first.seq);
      await receiptOf(env, sessionId, "turn-1");
      const late = await env.client.cancelTurn(sessionId, { requestId: "stop-twice" });
      assert.deepEqual(late, { seq: first.seq, duplicate: true, turnId: "turn-1" });
      await assert.rejects(
        () => env.client.cancelTurn(sessionId, { requestId: "another-stop" }),
        SessionStateError.isInstance,
      );
      const events = await env.client.readEvents(sessionId);
      assert.equal(events.filter((e) => e.type === "turn_cancelled").length, 1, "one receipt");
      assert.equal((await env.store.readInbox(sessionId, 0)).filter((e) => e.kind === "cancel").length, 1);
    });

    scenario("a cancel on an idle session is refused and changes nothing", async (box) => {
      const env = await setup(box);
      const { client } = env;
      const { sessionId: fresh } = await client.startSession({ agent: "conformance" });
      const { sessionId } = await client.startSession({ agent: "conformance", message: "hello" });
      await client.waitUntilIdle(sessionId);
      for (const id of [fresh, sessionId]) {
        const before = await client.snapshot(id);
        const events = await client.readEvents(id);
        const inbox = await env.store.readInbox(id, 0);
        await assert.rejects(() => client.cancelTurn(id), SessionStateError.isInstance);
        await assert.rejects(() => client.cancelTurn(id, { requestId: "r-9" }), SessionStateError.isInstance);
        assert.deepEqual(await client.snapshot(id), before);
        assert.deepEqual(await client.readEvents(id), events);
        assert.deepEqual(await env.store.readInbox(id, 0), inbox);
      }
      await assert.rejects(() => client.cancelTurn("no-such-session"), SessionNotFoundError.isInstance);
      await assert.rejects(
        () => client.cancelTurn(sessionId, { reason: 7 as unknown as string }),
        InvalidInputError.isInstance,
      );
      await assert.rejects(() => client.cancelTurn(sessionId, { requestId: "a/b" }), InvalidInputError.isInstance);
      await assert.rejects(
        () => client.cancelTurn(sessionId, { reason: "x".repeat(40_000) }),
        InputTooLargeError.isInstance,
      );
      await assert.rejects(() => client.cancelTurn(sessionId, { turnId: "turn 1" }), InvalidInputError.isInstance);
      await assert.rejects(() => client.steer(sessionId, "   "), InvalidInputError.isInstance);
      await assert.rejects(() => client.steer("no-such-session", "hi"), SessionNotFoundError.isInstance);
    });

    scenario("a cancel sent right after a message cancels the turn that message starts", async (box) => {
      const env = await setup(box, 0);
      const text = `hang model\n(stopped before it started, ${nonce()})`;
      const { sessionId } = await env.client.startSession({ agent: "conformance", message: text });
      // A caller naming the turn it saw end does not cancel the next one.
      await assert.rejects(() => env.client.cancelTurn(sessionId, { turnId: "turn-0" }), SessionStateError.isInstance);
      const accepted = await env.client.cancelTurn(sessionId, { turnId: "turn-1" });
      assert.equal(accepted.turnId, "turn-1");
      env.startWorker();
      const receipt = await receiptOf(env, sessionId, "turn-1");
      // An engine that applies the message and the cancellation together never calls the model; one
      // that applies one input at a time may start the call, and then aborts it.
      const hangs = scriptedHangs(text);
      assert.equal(receipt.modelCallAborted, hangs.started > 0);
      await waitUntil("every model call made to see its abort", () => scriptedHangs(text).aborted === hangs.started);
      assert.equal((await env.client.waitUntilIdle(sessionId)).turn?.phase, "cancelled");
    });

    scenario("steer during tool calls: the next model step sees the message exactly once", async (box) => {
      const env = await setup(box);
      const open = box.gate("look_up_order:S");
      const { sessionId } = await env.client.startSession({
        agent: "conformance",
        message: 'call look_up_order {"order_id":"S"}',
      });
      await waitUntil("the call to start", () => box.count("look_up_order") === 1);
      const first = await env.client.steer(sessionId, "also check the invoice", { messageId: "steer-1" });
      const again = await env.client.steer(sessionId, "also check the invoice", { messageId: "steer-1" });
      assert.equal(again.duplicate, true);
      assert.equal(again.seq, first.seq);
      await env.client.waitFor(sessionId, (s) => s.queuedMessages === 0 && (s.turn?.steered.length ?? 0) === 1);
      open();
      const done = await env.client.waitUntilIdle(sessionId);
      assert.equal(done.turnCount, 1, "the steered message joined the running turn");
      assert.equal(done.turn?.finalText, "Results: look_up_order -> order S is shipped (also: also check the invoice)");
      const steered = (await env.client.readEvents(sessionId)).filter((e) => e.type === "message_steered");
      assert.deepEqual(
        steered.map((e) => e.data),
        [{ turnId: "turn-1", text: "also check the invoice", modelStep: 2 }],
      );
      assert.equal(done.messages.filter((m) => m.text === "also check the invoice").length, 1, "stored once");
    });

    scenario("steer on an idle session starts a turn like a message", async (box) => {
      const env = await setup(box);
      const { sessionId } = await env.client.startSession({ agent: "conformance" });
      await env.client.steer(sessionId, "hello there");
      const done = await env.client.waitFor(sessionId, (s) => s.turnCount === 1 && s.status === "idle");
      assert.equal(done.turn?.finalText, "You said: hello there");
      const events = await env.client.readEvents(sessionId);
      assert.equal(events.filter((e) => e.type === "message_steered").length, 0);
    });

    scenario("every bad input gets its typed error and changes nothing", async (box) => {
      const env = await setup(box);
      const { client } = env;
      const { sessionId } = await client.startSession({
        agent: "conformance",
        message: 'call cancel_order {"order_id":"1002"}',
      });
      const waiting = await client.waitUntilIdle(sessionId);
      const interruptId = waiting.pendingInterrupts[0]!.interruptId;
      const before = await client.snapshot(sessionId);
      const inboxBefore = await env.store.readInbox(sessionId, 0);
      const refuse = async (what: string, call: () => Promise<unknown>, check: (e: unknown) => boolean) => {
        await assert.rejects(call, (e: unknown) => check(e), what);
      };
      await refuse(
        "unknown session: send",
        () => client.sendMessage("no-such-session", "hi"),
        SessionNotFoundError.isInstance,
      );
      await refuse(
        "unknown session: snapshot",
        () => client.snapshot("no-such-session"),
        SessionNotFoundError.isInstance,
      );
      await refuse(
        "unknown session: events",
        () => client.readEvents("no-such-session"),
        SessionNotFoundError.isInstance,
      );
      await refuse(
        "unknown session: approve",
        () => client.approve("no-such-session", interruptId),
        SessionNotFoundError.isInstance,
      );
      await refuse(
        "unknown interrupt",
        () => client.approve(sessionId, "no-such-interrupt"),
        InterruptNotFoundError.isInstance,
      );
      await refuse(
        "malformed text",
        () => client.sendMessage(sessionId, 42 as unknown as string),
        InvalidInputError.isInstance,
      );
      await refuse("empty text", () => client.sendMessage(sessionId, "   "), InvalidInputError.isInstance);
      await refuse("malformed session ID", () => client.sendMessage("a/b", "hi"), InvalidInputError.isInstance);
      await refuse(
        "approved is not a boolean",
        () => client.resolveInterrupt(sessionId, { interruptId, approved: "yes" as unknown as boolean }),
        InvalidInputError.isInstance,
      );
      await refuse(
        "a message with an approval",
        () => client.resolveInterrupt(sessionId, { interruptId, approved: true, message: "ok" }),
        InvalidInputError.isInstance,
      );
      await refuse(
        "oversize message",
        () => client.sendMessage(sessionId, "x".repeat(40_000)),
        InputTooLargeError.isInstance,
      );
      await refuse(
        "oversize rejection",
        () => client.reject(sessionId, interruptId, "x".repeat(40_000)),
        InputTooLargeError.isInstance,
      );
      await refuse(
        "wrong state: the session exists",
        () => client.startSession({ agent: "conformance", sessionId }),
        SessionStateError.isInstance,
      );
      const after = await client.snapshot(sessionId);
      assert.deepEqual(after, before, "no refused call changed the session");
      assert.deepEqual(await env.store.readInbox(sessionId, 0), inboxBefore, "no refused call wrote to the inbox");
      await client.approve(sessionId, interruptId);
      await refuse(
        "duplicate approval",
        () => client.approve(sessionId, interruptId),
        DuplicateResolutionError.isInstance,
      );
      await refuse(
        "approval after rejection",
        () => client.reject(sessionId, interruptId, "no"),
        DuplicateResolutionError.isInstance,
      );
      const done = await client.waitUntilIdle(sessionId);
      assert.equal(box.count("cancel_order"), 1, "the approval was applied once");
      await refuse(
        "duplicate approval after it was applied",
        () => client.approve(sessionId, interruptId),
        DuplicateResolutionError.isInstance,
      );
      assert.equal((await client.snapshot(sessionId)).version, done.version);
      await client.sendMessage(sessionId, "next turn");
      await client.waitFor(sessionId, (s) => s.turnCount === 2 && s.status === "idle");
      await refuse(
        "duplicate approval of an earlier turn's interrupt",
        () => client.approve(sessionId, interruptId),
        DuplicateResolutionError.isInstance,
      );
    });

    // Reconciliation: a check before a call is left outcome_unknown, and the attention interrupt after it.

    scenario("a worker dying after a write took effect: its check finds it done; it never runs again", async (box) => {
      const env = await setup(box, 0);
      const first = env.startWorker({ leaseTtlMs: dyingLeaseTtlMs });
      const release = box.gate("refund-after:R1");
      const { sessionId } = await env.client.startSession({
        agent: "conformance",
        message: 'call refund {"order_id":"R1","failing_checks":0}',
      });
      await waitUntil("the refund to take effect", () => box.ledger.size === 1);
      first.crash();
      const second = env.startWorker();
      const done = await env.client.waitUntilIdle(sessionId);
      const call = callOf(done, "refund");
      assert.equal(call.status, "succeeded");
      assert.equal(call.output, "refunded order R1");
      assert.deepEqual(call.reconciled, { by: "tool", found: "done" });
      assert.equal(done.turn?.finalText, "Results: refund -> refunded order R1");
      assert.deepEqual(done.pendingInterrupts, [], "nobody is asked");
      assert.deepEqual(
        box.checks.map((c) => [c.key, c.found]),
        [[call.idempotencyKey, "done"]],
      );
      const events = await env.client.readEvents(sessionId);
      const reconciled = events.filter((e) => e.type === "call_reconciled");
      assert.deepEqual(
        reconciled.map((e) => e.data),
        [
          {
            turnId: "turn-1",
            toolCallId: call.toolCallId,
            name: "refund",
            found: "done",
            attempts: 1,
            status: "succeeded",
          },
        ],
      );
      assert.deepEqual(await turnSteps(env, sessionId, "turn-1"), [
        "RunModel",
        "CallSingleAttemptTool",
        "ReconcileCall",
        "ResumeTurn",
        "RunModel",
      ]);
      release();
      await waitUntil(
        "the dead worker's call to return and both workers' drives to end",
        () => box.executions.every((e) => e.endedAt !== undefined) && first.drives > 0 && second.drives > 0,
      );
      assert.equal(box.count("refund"), 1, "a call reconciled done is never executed again");
    });

    scenario(
      "a worker dying before a write took effect: not done, offered again, run only after the approval",
      async (box) => {
        const env = await setup(box, 0);
        const first = env.startWorker({ leaseTtlMs: dyingLeaseTtlMs });
        const open = box.writeGate("refund:R2");
        const { sessionId } = await env.client.startSession({
          agent: "conformance",
          message: 'call refund {"order_id":"R2","failing_checks":0}',
        });
        await waitUntil("the refund to start", () => box.count("refund") === 1);
        first.crash();
        // The dead worker's attempt dies without taking effect.
        open("fail");
        await waitUntil("the dead attempt to end", () => box.executions.every((e) => e.endedAt !== undefined));
        env.startWorker();
        const waiting = await env.client.waitUntilIdle(sessionId);
        assert.equal(waiting.status, "awaiting_approval");
        const call = callOf(waiting, "refund");
        assert.equal(call.status, "awaiting_approval");
        assert.deepEqual(call.reconciled, { by: "tool", found: "not_done" });
        const [interrupt] = waiting.pendingInterrupts;
        assert.equal(interrupt?.kind, "approval");
        assert.equal(interrupt?.toolCallId, call.toolCallId);
        assert.match(interrupt?.reason ?? "", /did not take effect/);
        assert.equal(box.count("refund"), 1, "not run again before a person approves");
        const approvedAt = Date.now();
        await env.client.approve(sessionId, interrupt!.interruptId);
        const done = await env.client.waitUntilIdle(sessionId);
        const after = callOf(done, "refund");
        assert.equal(after.status, "succeeded");
        assert.equal(after.attempts, 2);
        const runs = box.runsOf("refund", call.idempotencyKey!);
        assert.equal(runs.length, 2, "it ran again, with the same key");
        assert.ok(runs[1]!.startedAt >= approvedAt, "the second run started after the approval");
        assert.equal(done.turn?.finalText, "Results: refund -> refunded order R2");
        assert.deepEqual(await turnSteps(env, sessionId, "turn-1"), [
          "RunModel",
          "CallSingleAttemptTool",
          "ReconcileCall",
          "AwaitToolApproval:approved",
          "CallSingleAttemptTool",
          "ResumeTurn",
          "RunModel",
        ]);
      },
    );

    scenario(
      "a worker dying while a write is in flight: the check cannot tell; outcome_unknown and attention",
      async (box) => {
        const env = await setup(box, 0);
        const first = env.startWorker({ leaseTtlMs: dyingLeaseTtlMs });
        const open = box.writeGate("refund:R3");
        const { sessionId } = await env.client.startSession({
          agent: "conformance",
          message: 'call refund {"order_id":"R3","failing_checks":0}',
        });
        await waitUntil("the refund to start", () => box.count("refund") === 1);
        first.crash();
        env.startWorker();
        const done = await env.client.waitUntilIdle(sessionId);
        const call = callOf(done, "refund");
        assert.equal(call.status, "outcome_unknown");
        assert.deepEqual(call.reconciled, { by: "tool", found: "unknown" });
        assert.match(call.message ?? "", /a check could not tell/);
        assert.match(done.turn?.finalText ?? "", /refund -> The outcome of this tool call is unknown/);
        assert.match(done.turn?.finalText ?? "", /A person has been asked to check it/);
        const [attention] = done.pendingInterrupts;
        assert.equal(done.pendingInterrupts.length, 1);
        assert.equal(attention?.kind, "attention");
        assert.equal(attention?.idempotencyKey, call.idempotencyKey);
        assert.equal(attention?.effect, "non_idempotent_write");
        const events = await env.client.readEvents(sessionId);
        assert.deepEqual(
          events
            .filter((e) => e.type === "attention_required")
            .map((e) => e.type === "attention_required" && e.data.interrupt),
          [attention],
        );
        open("fail");
        await waitUntil("the dead attempt to end", () => box.executions.every((e) => e.endedAt !== undefined));
        assert.equal(box.count("refund"), 1);
      },
    );

    scenario("a check that fails twice, then finds the write done: retried like a read", async (box) => {
      const env = await setup(box, 0);
      const first = env.startWorker({ leaseTtlMs: dyingLeaseTtlMs });
      const release = box.gate("refund-after:R4");
      const { sessionId } = await env.client.startSession({
        agent: "conformance",
        message: 'call refund {"order_id":"R4","failing_checks":2}',
      });
      await waitUntil("the refund to take effect", () => box.ledger.size === 1);
      first.crash();
      env.startWorker();
      const done = await env.client.waitUntilIdle(sessionId);
      const call = callOf(done, "refund");
      assert.equal(call.status, "succeeded");
      assert.equal(call.reconcileAttempts, 3);
      assert.deepEqual(
        box.checks.map((c) => [c.attempt, c.found]),
        [
          [1, "threw"],
          [2, "threw"],
          [3, "done"],
        ],
      );
      const checks = (await env.client.steps(sessionId)).filter((s) => s.step === "ReconcileCall");
      assert.deepEqual(
        checks.map((s) => s.status),
        ["failed", "failed", "completed"],
      );
      const reconciled = (await env.client.readEvents(sessionId)).find((e) => e.type === "call_reconciled");
      assert.equal(reconciled?.type === "call_reconciled" && reconciled.data.attempts, 3);
      release();
      await waitUntil("the dead worker's call to return", () => box.executions.every((e) => e.endedAt !== undefined));
      assert.equal(box.count("refund"), 1);
    });

    scenario(
      "a single attempt that fails ambiguously is checked; three failed checks leave it unknown",
      async (box) => {
        const env = await setup(box);
        box.writeGate("refund:R5")("fail");
        box.writeGate("refund:R6")("fail");
        // Opened gates are gone: make the attempts fail through the gate by holding a fresh one open as "fail".
        const failing = (name: string) => {
          const gate = { promise: Promise.resolve("fail" as const), open: () => {} };
          box.writeGates.set(name, gate);
        };
        failing("refund:R5");
        failing("refund:R6");
        const { sessionId } = await env.client.startSession({
          agent: "conformance",
          message: [
            'call refund {"order_id":"R5","failing_checks":1}',
            'call refund {"order_id":"R6","failing_checks":3}',
          ].join("\n"),
        });
        const waiting = await env.client.waitFor(
          sessionId,
          (s) => s.status === "awaiting_approval" && s.pendingInterrupts.length === 2,
        );
        const [r5, r6] = waiting.turn!.calls;
        assert.equal(r5?.status, "awaiting_approval", "one failed check, then not done: offered again");
        assert.equal(r5?.reconcileAttempts, 2);
        assert.equal(r6?.status, "outcome_unknown", "every check failed: unknown");
        assert.equal(r6?.reconcileAttempts, 3);
        assert.match(r6?.message ?? "", /its check failed 3 time\(s\)/);
        assert.deepEqual(
          waiting.pendingInterrupts.map((i) => [i.kind, i.toolCallId]).sort(),
          [
            ["approval", r5!.toolCallId],
            ["attention", r6!.toolCallId],
          ].sort(),
        );
        assert.equal(box.count("refund"), 2, "each ran once");
        const approval = waiting.pendingInterrupts.find((i) => i.kind === "approval")!;
        await env.client.reject(sessionId, approval.interruptId, "Refund it by hand instead.");
        const done = await env.client.waitUntilIdle(sessionId);
        assert.equal(callOf(done, "refund").status, "rejected");
        assert.equal(box.count("refund"), 2, "a rejected retry never runs");
        assert.match(done.turn?.finalText ?? "", /refund -> Refund it by hand instead\. \| refund -> The outcome/);
      },
    );

    scenario("an idempotent write out of attempts: not done, it runs again with the same key (once)", async (box) => {
      const env = await setup(box);
      const { sessionId } = await env.client.startSession({
        agent: "conformance",
        message: 'call transfer {"id":"T1","failures":3}\ncall transfer {"id":"T2","failures":6}',
      });
      const done = await env.client.waitUntilIdle(sessionId);
      const [t1, t2] = done.turn!.calls;
      assert.equal(t1?.status, "succeeded");
      assert.equal(t1?.attempts, 4);
      assert.equal(t1?.output, "transferred T1");
      assert.deepEqual(t1?.reconciled, { by: "tool", found: "not_done" });
      assert.equal(t2?.status, "failed");
      assert.equal(t2?.attempts, 6);
      assert.match(t2?.message ?? "", /did not take effect, after it had already run again/);
      for (const call of [t1!, t2!]) {
        const runs = box.runsOf("transfer", call.idempotencyKey!);
        assert.equal(runs.length, call.attempts, "every attempt used the call's one key");
        assert.deepEqual(
          runs.map((r) => r.attempt),
          Array.from({ length: call.attempts }, (_, i) => i + 1),
        );
      }
      assert.deepEqual(
        box.checks.filter((c) => c.key === t2!.idempotencyKey).map((c) => c.found),
        ["not_done", "not_done"],
      );
      assert.deepEqual(done.pendingInterrupts, [], "nothing is left unknown");
      assert.match(done.turn?.finalText ?? "", /transfer -> transferred T1 \| transfer -> The tool call failed/);
    });

    scenario("a cancelled write that took effect and outlived the grace period is reconciled done", async (box) => {
      const env = await setup(box);
      const release = box.gate("refund-after:R7");
      const { sessionId } = await env.client.startSession({
        agent: "conformance",
        message: 'call refund {"order_id":"R7","failing_checks":0}',
      });
      await waitUntil("the refund to take effect", () => box.ledger.size === 1);
      await env.client.cancelTurn(sessionId);
      const receipt = await receiptOf(env, sessionId, "turn-1");
      assert.deepEqual(
        receipt.calls.map((c) => [c.name, c.status]),
        [["refund", "succeeded"]],
      );
      const done = await env.client.waitUntilIdle(sessionId);
      assert.deepEqual(callOf(done, "refund").reconciled, { by: "tool", found: "done" });
      assert.deepEqual(done.pendingInterrupts, []);
      assert.match(
        done.messages.at(-1)?.text ?? "",
        /refund\(\{"order_id":"R7","failing_checks":0\}\): succeeded: refunded order R7/,
      );
      release();
      await waitUntil("the refund to return", () => box.executions.every((e) => e.endedAt !== undefined));
      assert.equal(box.count("refund"), 1);
    });

    scenario(
      "an attention resolved done while its turn waits: the record is succeeded; a follow-up turn tells the model",
      async (box) => {
        const env = await setup(box);
        const { sessionId } = await env.client.startSession({
          agent: "conformance",
          message: 'call send_email {"to":"a@example.com"}\ncall cancel_order {"order_id":"9"}',
        });
        const waiting = await env.client.waitFor(sessionId, (s) => s.pendingInterrupts.length === 2);
        const attention = waiting.pendingInterrupts.find((i) => i.kind === "attention")!;
        const approval = waiting.pendingInterrupts.find((i) => i.kind === "approval")!;
        assert.equal(attention.toolName, "send_email");
        await env.client.resolveAttention(sessionId, attention.interruptId, {
          outcome: "done",
          output: "the mail log shows it was sent",
        });
        const resolved = await env.client.waitFor(sessionId, (s) => s.pendingInterrupts.length === 1);
        const email = callOf(resolved, "send_email");
        assert.equal(email.status, "succeeded");
        assert.equal(email.output, "the mail log shows it was sent");
        assert.deepEqual(email.reconciled, { by: "person", found: "done" });
        await env.client.approve(sessionId, approval.interruptId);
        const done = await env.client.waitFor(sessionId, (s) => s.turnCount === 2 && s.status === "idle");
        assert.equal(box.count("send_email"), 1, "marking it done runs nothing");
        const events = await env.client.readEvents(sessionId);
        const turn1 = events.find((e) => e.type === "turn_completed" && e.data.turnId === "turn-1");
        assert.equal(
          turn1?.type === "turn_completed" && turn1.data.text,
          "Results: send_email -> the mail log shows it was sent | cancel_order -> order 9 is cancelled",
        );
        assert.equal(done.turn?.followUp?.interruptId, attention.interruptId);
        assert.equal(
          done.turn?.finalText,
          'You said: [attention resolved] A person checked the tool call send_email({"to":"a@example.com"}) of turn-1, whose outcome was unknown: it took effect. Its result: the mail log shows it was sent',
        );
        const resolvedEvents = events.filter((e) => e.type === "attention_resolved");
        assert.deepEqual(
          resolvedEvents.map((e) => e.data),
          [
            {
              interruptId: attention.interruptId,
              turnId: "turn-1",
              toolCallId: email.toolCallId,
              outcome: "done",
              output: "the mail log shows it was sent",
            },
          ],
        );
        assert.deepEqual(done.pendingInterrupts, []);
      },
    );

    scenario(
      "an attention resolved not done: a single-attempt call is offered again and runs after the approval",
      async (box) => {
        const env = await setup(box);
        const { sessionId } = await env.client.startSession({
          agent: "conformance",
          message: 'call post_letter {"to":"B","failures":1}',
        });
        const first = await env.client.waitUntilIdle(sessionId);
        const call = callOf(first, "post_letter");
        assert.equal(call.status, "outcome_unknown");
        const [attention] = first.pendingInterrupts;
        await env.client.resolveAttention(sessionId, attention!.interruptId, { outcome: "not_done" });
        const waiting = await env.client.waitFor(
          sessionId,
          (s) => s.turnCount === 2 && s.status === "awaiting_approval",
        );
        const [approval] = waiting.pendingInterrupts;
        assert.equal(approval?.kind, "approval");
        assert.equal(approval?.turnId, "turn-2");
        assert.match(approval?.reason ?? "", /not done/);
        assert.equal(box.count("post_letter"), 1, "not run again before a person approves");
        const approvedAt = Date.now();
        await env.client.approve(sessionId, approval!.interruptId);
        const done = await env.client.waitFor(sessionId, (s) => s.turnCount === 2 && s.status === "idle");
        const runs = box.runsOf("post_letter", call.idempotencyKey!);
        assert.equal(runs.length, 2, "it ran again with the same key");
        assert.ok(runs[1]!.startedAt >= approvedAt);
        const rerun = callOf(done, "post_letter");
        assert.equal(rerun.status, "succeeded");
        assert.equal(rerun.response, 0);
        assert.equal(rerun.idempotencyKey, call.idempotencyKey);
        assert.deepEqual(await turnSteps(env, sessionId, "turn-2"), [
          "AwaitToolApproval:approved",
          "CallSingleAttemptTool",
          "ResumeTurn",
          "RunModel",
        ]);
        assert.match(
          done.turn?.finalText ?? "",
          /^You said: \[attention resolved\] A person checked the tool call post_letter\(.*\) of turn-1, whose outcome was unknown: it did not take effect, so it runs again once a person approves it again\. \(also: \[attention resolved\] The tool call post_letter ran again: succeeded: letter to B posted\)$/,
        );
      },
    );

    scenario(
      "an attention on an idempotent write resolved not done runs it again at once, with its key",
      async (box) => {
        const env = await setup(box);
        const { sessionId } = await env.client.startSession({
          agent: "conformance",
          message: 'call charge_card {"amount":7}',
        });
        const first = await env.client.waitUntilIdle(sessionId);
        const call = callOf(first, "charge_card");
        const [attention] = first.pendingInterrupts;
        assert.equal(attention?.kind, "attention");
        await env.client.resolveAttention(sessionId, attention!.interruptId, { outcome: "not_done" });
        const done = await env.client.waitFor(
          sessionId,
          (s) => s.turnCount === 2 && s.status === "idle" && s.pendingInterrupts.length === 1,
        );
        assert.equal(box.runsOf("charge_card", call.idempotencyKey!).length, 6, "three more attempts, one key");
        assert.equal(callOf(done, "charge_card").status, "outcome_unknown");
        const [again] = done.pendingInterrupts;
        assert.equal(again?.turnId, "turn-2", "still unknown: a person is asked again");
        assert.notEqual(again?.interruptId, attention!.interruptId);
      },
    );

    scenario("an attention left unknown: nothing runs and no turn starts", async (box) => {
      const env = await setup(box);
      const { sessionId } = await env.client.startSession({
        agent: "conformance",
        message: 'call send_email {"to":"c@example.com"}',
      });
      const first = await env.client.waitUntilIdle(sessionId);
      const [attention] = first.pendingInterrupts;
      await env.client.resolveAttention(sessionId, attention!.interruptId, { outcome: "unknown" });
      const done = await env.client.waitFor(sessionId, (s) => s.pendingInterrupts.length === 0);
      assert.equal(done.turnCount, 1);
      const call = callOf(done, "send_email");
      assert.equal(call.status, "outcome_unknown");
      assert.deepEqual(call.reconciled, { by: "person", found: "unknown" });
      assert.equal(box.count("send_email"), 1);
      assert.deepEqual(done.messages, first.messages, "the model is told nothing new");
    });

    scenario("attention resolutions: every bad input gets its typed error and changes nothing", async (box) => {
      const env = await setup(box);
      const { client } = env;
      const { sessionId } = await client.startSession({
        agent: "conformance",
        message: 'call send_email {"to":"d@example.com"}\ncall cancel_order {"order_id":"3"}',
      });
      const waiting = await client.waitFor(sessionId, (s) => s.pendingInterrupts.length === 2);
      const attention = waiting.pendingInterrupts.find((i) => i.kind === "attention")!.interruptId;
      const approval = waiting.pendingInterrupts.find((i) => i.kind === "approval")!.interruptId;
      const before = await client.snapshot(sessionId);
      const inboxBefore = await env.store.readInbox(sessionId, 0);
      const refuse = (what: string, call: () => Promise<unknown>, check: (e: unknown) => boolean) =>
        assert.rejects(call, (e: unknown) => check(e), what);
      const done = { outcome: "done", output: "sent" } as const;
      await refuse(
        "unknown session",
        () => client.resolveAttention("no-such-session", attention, done),
        SessionNotFoundError.isInstance,
      );
      await refuse(
        "unknown interrupt",
        () => client.resolveAttention(sessionId, "turn-1-attention-x", done),
        InterruptNotFoundError.isInstance,
      );
      await refuse(
        "no outcome",
        () => client.resolveAttention(sessionId, attention, {} as never),
        InvalidInputError.isInstance,
      );
      await refuse(
        "done without an output",
        () => client.resolveAttention(sessionId, attention, { outcome: "done" } as never),
        InvalidInputError.isInstance,
      );
      await refuse(
        "done with an empty output",
        () => client.resolveAttention(sessionId, attention, { outcome: "done", output: "  " }),
        InvalidInputError.isInstance,
      );
      await refuse(
        "an output with not_done",
        () => client.resolveAttention(sessionId, attention, { outcome: "not_done", output: "x" } as never),
        InvalidInputError.isInstance,
      );
      await refuse(
        "an oversize output",
        () => client.resolveAttention(sessionId, attention, { outcome: "done", output: "x".repeat(40_000) }),
        InputTooLargeError.isInstance,
      );
      await refuse(
        "an approval resolved as attention",
        () => client.resolveAttention(sessionId, approval, done),
        SessionStateError.isInstance,
      );
      await refuse("an attention approved", () => client.approve(sessionId, attention), SessionStateError.isInstance);
      await refuse(
        "an attention rejected",
        () => client.reject(sessionId, attention, "no"),
        SessionStateError.isInstance,
      );
      assert.deepEqual(await client.snapshot(sessionId), before, "no refused call changed the session");
      assert.deepEqual(await env.store.readInbox(sessionId, 0), inboxBefore, "no refused call wrote to the inbox");
      await client.resolveAttention(sessionId, attention, { outcome: "unknown" });
      await refuse(
        "a second resolution",
        () => client.resolveAttention(sessionId, attention, done),
        DuplicateResolutionError.isInstance,
      );
      await client.waitFor(sessionId, (s) => s.pendingInterrupts.length === 1);
      await refuse(
        "a resolution after it was applied",
        () => client.resolveAttention(sessionId, attention, { outcome: "not_done" }),
        DuplicateResolutionError.isInstance,
      );
      await refuse(
        "an attention approved after it was resolved",
        () => client.approve(sessionId, attention),
        SessionStateError.isInstance,
      );
      assert.equal(box.count("send_email"), 1);
    });

    // Pinning (DESIGN §9): a session runs only on the definition it started with, unless a migration says how.
    const eventsOfType = async <T extends SessionEvent["type"]>(env: Env, sessionId: string, type: T) =>
      (await env.client.readEvents(sessionId)).filter((e): e is Extract<SessionEvent, { type: T }> => e.type === type);

    /** A session of definition v1 waiting for approval of cancel_order, and v1's worker stopped. */
    const waitingOnV1 = async (env: Env, box: ToolBox) => {
      const v1 = env.definition;
      const client = new SessionClient({ store: env.store, sessions: [v1] });
      const first = env.startWorker({ definition: v1 });
      const { sessionId } = await client.startSession({
        agent: "conformance",
        message: 'call cancel_order {"order_id":"1002"}',
      });
      const waiting = await client.waitUntilIdle(sessionId);
      assert.equal(waiting.status, "awaiting_approval");
      assert.equal(waiting.definition?.fingerprint, v1.fingerprint, "the client pinned it to v1 at start");
      const pinned = await eventsOfType(env, sessionId, "definition_pinned");
      assert.deepEqual(
        pinned.map((e) => [e.data.fingerprint, e.data.by]),
        [[v1.fingerprint, "client"]],
      );
      await first.stop({ timeoutMs: 2_000 });
      assert.equal(box.count("cancel_order"), 0);
      return { sessionId, interruptId: waiting.pendingInterrupts[0]!.interruptId, waiting };
    };

    scenario(
      "pinning: without a migration a session waits for its definition, and finishes on its own definition's worker",
      async (box) => {
        const env = await setup(box, 0);
        const v1 = env.definition;
        const v2 = await env.defineVersion("reason");
        assert.notEqual(v2.fingerprint, v1.fingerprint, "a new argument schema is another definition");
        const { sessionId, interruptId, waiting } = await waitingOnV1(env, box);
        env.startWorker({ definition: v2 });
        // A new session goes to the new definition's worker.
        const client2 = new SessionClient({ store: env.store, sessions: [v2] });
        const fresh = await client2.startSession({
          agent: "conformance",
          message: 'call look_up_order {"order_id":"7"}',
        });
        const freshDone = await client2.waitUntilIdle(fresh.sessionId);
        assert.equal(freshDone.turn?.finalText, "Results: look_up_order -> order 7 is shipped");
        assert.equal(freshDone.definition?.fingerprint, v2.fingerprint);
        assert.deepEqual(
          box.executions.filter((e) => e.tool === "look_up_order").map((e) => e.variant),
          ["reason"],
        );
        // The old session's approval arrives while only v2 runs: it waits, visibly, and is not failed.
        await env.client.approve(sessionId, interruptId);
        const parked = await env.client.waitUntilIdle(sessionId);
        assert.equal(parked.status, "waiting_for_definition");
        assert.equal(parked.definition?.fingerprint, v1.fingerprint);
        assert.equal(parked.definition?.waiting?.reason, "unserved");
        assert.equal(parked.unappliedDecisions, 1, "the approval waits in the inbox, not applied to v2's tool");
        assert.equal(parked.turn?.phase, "tools");
        assert.deepEqual(parked.turn?.calls, waiting.turn?.calls, "nothing of the turn changed");
        assert.equal(box.count("cancel_order"), 0);
        const marks = await eventsOfType(env, sessionId, "definition_waiting");
        assert.deepEqual(
          marks.map((e) => [e.data.fingerprint, e.data.reason]),
          [[v1.fingerprint, "unserved"]],
        );
        // Marked once: the v2 worker goes on looking for work without marking it again.
        await new Promise((resolve) => setTimeout(resolve, 300));
        assert.equal((await eventsOfType(env, sessionId, "definition_waiting")).length, 1);
        assert.equal((await eventsOfType(env, sessionId, "turn_failed")).length, 0);
        // A worker of v1 comes back: the session finishes there, on v1's tool.
        env.startWorker({ definition: v1 });
        const done = await env.client.waitFor(sessionId, (s) => s.status === "idle" && s.turn?.phase === "completed");
        assert.equal(done.turn?.finalText, "Results: cancel_order -> order 1002 is cancelled");
        assert.equal(done.definition?.fingerprint, v1.fingerprint);
        assert.equal(done.definition?.waiting, null);
        assert.deepEqual(
          box.executions.filter((e) => e.tool === "cancel_order").map((e) => e.variant),
          ["v1"],
        );
        assert.equal((await eventsOfType(env, sessionId, "definition_served")).length, 1);
      },
    );

    scenario(
      "pinning: a registered migration moves a session waiting for approval to the new definition",
      async (box) => {
        const env = await setup(box, 0);
        const v1 = env.definition;
        const { sessionId, interruptId } = await waitingOnV1(env, box);
        // v2 requires a reason; its migration gives the pending call one, on the call and on its interrupt.
        const v2 = await env.defineVersion("reason", [
          {
            from: v1.fingerprint,
            transform: ({ head }) => {
              const withReason = (args: string) => JSON.stringify({ ...JSON.parse(args), reason: "migrated" });
              for (const call of head.turn?.calls ?? []) call.arguments = withReason(call.arguments);
              for (const interrupt of head.pendingInterrupts) interrupt.arguments = withReason(interrupt.arguments);
              return { head };
            },
          },
        ]);
        env.startWorker({ definition: v2 });
        await env.client.approve(sessionId, interruptId);
        const done = await env.client.waitFor(sessionId, (s) => s.status === "idle" && s.turn?.phase === "completed");
        assert.equal(done.definition?.fingerprint, v2.fingerprint);
        assert.equal(done.turn?.finalText, "Results: cancel_order -> order 1002 is cancelled (migrated)");
        const runs = box.executions.filter((e) => e.tool === "cancel_order");
        assert.deepEqual(
          runs.map((e) => [e.variant, e.args.reason]),
          [["reason", "migrated"]],
          "the approved call ran once, on v2, with the migrated arguments",
        );
        const migrated = await eventsOfType(env, sessionId, "definition_migrated");
        assert.deepEqual(
          migrated.map((e) => [e.data.from, e.data.to, e.data.migration]),
          [[v1.fingerprint, v2.fingerprint, "transform"]],
        );
        assert.equal((await eventsOfType(env, sessionId, "definition_waiting")).length, 0);
        // The migration is its own step: committed before the approval was applied.
        const all = await env.client.readEvents(sessionId);
        const at = (type: string) => all.findIndex((e) => e.type === type);
        assert.ok(at("definition_migrated") < at("interrupt_resolved"));
      },
    );

    scenario(
      "pinning: a migration that fails leaves the session waiting and unchanged; one that accepts moves it",
      async (box) => {
        const env = await setup(box, 0);
        const v1 = env.definition;
        const { sessionId, interruptId, waiting } = await waitingOnV1(env, box);
        const broken = await env.defineVersion("extra", [
          {
            from: v1.fingerprint,
            transform: () => {
              throw new Error("cannot read this session");
            },
          },
        ]);
        const bad = env.startWorker({ definition: broken, leaseTtlMs: 400 });
        await env.client.approve(sessionId, interruptId);
        const parked = await env.client.waitUntilIdle(sessionId);
        assert.equal(parked.status, "waiting_for_definition");
        assert.equal(parked.definition?.fingerprint, v1.fingerprint, "a failed migration changes no pin");
        assert.equal(parked.definition?.waiting?.reason, "migration_failed");
        assert.match(parked.definition?.waiting?.error ?? "", /cannot read this session/);
        assert.deepEqual(parked.turn?.calls, waiting.turn?.calls);
        assert.deepEqual(parked.pendingInterrupts, waiting.pendingInterrupts);
        assert.equal(parked.unappliedDecisions, 1);
        const marks = await eventsOfType(env, sessionId, "definition_waiting");
        assert.deepEqual(
          marks.map((e) => e.data.reason),
          ["migration_failed"],
        );
        assert.equal((await eventsOfType(env, sessionId, "definition_migrated")).length, 0);
        assert.equal(box.count("cancel_order"), 0);
        await bad.stop({ timeoutMs: 2_000 });
        // The same tools with a migration that accepts the session as it is.
        const accepting = await env.defineVersion("extra", [{ from: v1.fingerprint, accept: true }]);
        assert.equal(accepting.fingerprint, broken.fingerprint, "migrations are not part of the fingerprint");
        env.startWorker({ definition: accepting });
        const done = await env.client.waitFor(sessionId, (s) => s.status === "idle" && s.turn?.phase === "completed");
        assert.equal(done.definition?.fingerprint, accepting.fingerprint);
        assert.equal(done.turn?.finalText, "Results: cancel_order -> order 1002 is cancelled");
        assert.deepEqual(
          box.executions.filter((e) => e.tool === "cancel_order").map((e) => e.variant),
          ["extra"],
        );
        const migrated = await eventsOfType(env, sessionId, "definition_migrated");
        assert.deepEqual(
          migrated.map((e) => [e.data.from, e.data.migration, e.data.appendedItems]),
          [[v1.fingerprint, "accept", 0]],
        );
        assert.equal((await eventsOfType(env, sessionId, "definition_waiting")).length, 1, "marked once");
      },
    );
  });
}
