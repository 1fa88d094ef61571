/**
 * The agent every crash suite runs: core's framework-free `ScriptedRunner` (the user message is a
 * script of `call <tool> <json>` lines and `then` separators) with four tools, one per row of the
 * policy table that matters here. Every tool writes its execution to its execution log before it
 * works, sleeps a few milliseconds (so a SIGKILL can land mid-call), and fails at random.
 *
 * The tools observe their call's abort signal (`currentToolCall().signal`: the turn was cancelled,
 * or the worker is losing the session). The work of every tool is "done" at the end of its sleep,
 * so a tool stopped during the sleep changed nothing: `read` and `idempotent_write` stop at once
 * (they may be repeated safely; they throw); a single-attempt tool stops half of the time with
 * `ToolCancelledError` (it says it changed nothing) and half of the time ignores the signal and
 * finishes (a tool that cannot be interrupted: its real outcome, or `outcome_unknown` once the
 * grace period is over). A stop is recorded as the execution's result `cancelled`.
 *
 * Two more tools declare `reconcile` (`idempotent_write_checked`, `non_idempotent_write_checked`):
 * the same bodies, and a check that reads the execution log by the call's idempotency key, as a
 * payment provider is asked for the charge with a key. A tool's work counts as done when one of its
 * executions ended `ok`; the check says `done` (with what that execution returned), `unknown` while an
 * execution with the key has no end and its worker process is alive (it may still do the work), and
 * `not_done` otherwise. The check itself fails at random (half the tools' failure rate).
 */
import { randomInt } from "node:crypto";
import {
  currentToolCall,
  defineSession,
  ToolCancelledError,
  ToolExecutionError,
  type Reconcile,
  type SessionDefinition,
  type ToolEffect,
} from "@durable-agents/core";
import { ScriptedRunner, type ConformanceTool } from "@durable-agents/core/testing";
import type { ExecutionLog, ExecutionResult } from "./execution-log.js";

export const CRASH_AGENT = "crash-agent";

/**
 * The tools, their effect, whether a person must approve each call, the executions one round of
 * attempts allows, and whether the policy declares `reconcile` (a call found not done gets another
 * round: an `idempotent_write` at once, a single-attempt call after a new approval).
 */
export const crashTools = {
  read: { effect: "read", needsApproval: false, maxExecutions: 3, reconcile: false },
  idempotent_write: { effect: "idempotent_write", needsApproval: false, maxExecutions: 3, reconcile: false },
  non_idempotent_write: { effect: "non_idempotent_write", needsApproval: true, maxExecutions: 1, reconcile: false },
  non_idempotent_write_auto: {
    effect: "non_idempotent_write",
    needsApproval: false,
    maxExecutions: 1,
    reconcile: false,
  },
  idempotent_write_checked: { effect: "idempotent_write", needsApproval: false, maxExecutions: 3, reconcile: true },
  non_idempotent_write_checked: {
    effect: "non_idempotent_write",
    needsApproval: false,
    maxExecutions: 1,
    reconcile: true,
  },
} as const satisfies Record<
  string,
  { effect: ToolEffect; needsApproval: boolean; maxExecutions: number; reconcile: boolean }
>;

export type CrashToolName = keyof typeof crashTools;
export const crashToolNames = Object.keys(crashTools) as CrashToolName[];

export interface CrashAgentOptions {
  /** Where the tools record their executions (never through the store). */
  readonly executions: ExecutionLog;
  /** Chance that one execution fails. Default 0.2. */
  readonly failureRate?: number;
  /** Longest sleep of a tool, in ms. Default 50. */
  readonly maxSleepMs?: number;
  /**
   * How long a cancelled turn waits for its calls in flight. Default 30 ms: shorter than most of a
   * tool's sleep, so a single-attempt tool that ignores the signal sometimes returns in time (its
   * real outcome) and sometimes not (`outcome_unknown`).
   */
  readonly cancelGraceMs?: number;
}

/** Sleeps `ms`; resolves `true` as soon as `signal` aborts (at once when it has), else `false`. */
function sleepUnlessAborted(ms: number, signal: AbortSignal | undefined): Promise<boolean> {
  if (signal?.aborted) return Promise.resolve(true);
  return new Promise((resolve) => {
    const onAbort = () => {
      clearTimeout(timer);
      resolve(true);
    };
    const timer = setTimeout(() => {
      signal?.removeEventListener("abort", onAbort);
      resolve(false);
    }, ms);
    signal?.addEventListener("abort", onAbort, { once: true });
  });
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** The text a tool returns when its attempt ends `ok` (a check that finds it done says the same). */
export const toolOutput = (name: string, key: unknown, attempt: number) =>
  `${name} ${String(key)} done on attempt ${attempt}`;

/** Whether a worker process is alive (an execution of a dead worker will never do its work). */
function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === "EPERM";
  }
}

/** The check of a tool with `reconcile`: reads the execution log by the call's idempotency key. */
function crashReconcile(name: CrashToolName, options: CrashAgentOptions): Reconcile {
  const failureRate = options.failureRate ?? 0.2;
  return async ({ idempotencyKey, arguments: args }) => {
    if (Math.random() < failureRate / 2) throw new Error(`the execution log did not answer the check of ${name}`);
    const runs = await options.executions.ofKey(idempotencyKey);
    const ok = runs.find((run) => run.result === "ok");
    if (ok) return { status: "done", output: toolOutput(name, (args as { key?: unknown }).key, ok.attempt) };
    if (runs.some((run) => run.finishedAt === null && alive(run.workerPid))) return { status: "unknown" };
    return { status: "not_done" };
  };
}

function crashTool(name: CrashToolName, options: CrashAgentOptions): ConformanceTool {
  const failureRate = options.failureRate ?? 0.2;
  const maxSleepMs = options.maxSleepMs ?? 50;
  return {
    name,
    description: `${crashTools[name].effect} tool of the crash suites`,
    parameters: { key: "string" },
    async execute(args) {
      const call = currentToolCall();
      if (!call) throw new Error(`${name} ran outside a tool call step`);
      const signal = call.signal;
      // Stopped before it began: nothing was done, nothing is recorded.
      if (signal?.aborted) throw new ToolCancelledError(`${name} was stopped before it began`);
      const id = await options.executions.start({
        sessionId: call.sessionId,
        turnId: call.turnId,
        tool: name,
        toolCallId: call.toolCallId,
        idempotencyKey: call.idempotencyKey,
        attempt: call.attempt,
        workerPid: process.pid,
        startedAt: Date.now(),
      });
      const sleepMs = randomInt(2, maxSleepMs + 1);
      const sleptFrom = Date.now();
      if (await sleepUnlessAborted(sleepMs, signal)) {
        const singleAttempt = crashTools[name].maxExecutions === 1;
        if (!singleAttempt || Math.random() < 0.5) {
          await options.executions.finish(id, Date.now(), "cancelled");
          if (name !== "read")
            throw new ToolCancelledError(`${name} stopped on its signal; key ${String(args.key)} untouched`);
          // A read may simply stop (any error): it is safe to repeat.
          throw signal?.reason instanceof Error ? signal.reason : new Error(`${name} stopped on its signal`);
        }
        // It cannot be interrupted: the rest of its work, then its real result.
        await sleep(Math.max(0, sleepMs - (Date.now() - sleptFrom)));
      }
      const roll = Math.random();
      // Single-attempt tools fail half the time with a message for the model (recorded `failed`),
      // half the time with an error (recorded `outcome_unknown`); the others are retried.
      const result: ExecutionResult =
        roll >= failureRate
          ? "ok"
          : crashTools[name].maxExecutions === 1 && roll < failureRate / 2
            ? "tool_error"
            : "error";
      await options.executions.finish(id, Date.now(), result);
      if (result === "tool_error") throw new ToolExecutionError(`${name} refused key ${String(args.key)}`);
      if (result === "error") throw new Error(`${name} failed on attempt ${call.attempt} (injected)`);
      return toolOutput(name, args.key, call.attempt);
    },
  };
}

/** The session definition, built the same way in every worker process. */
export function crashAgent(options: CrashAgentOptions): SessionDefinition {
  const runner = new ScriptedRunner({ tools: crashToolNames.map((name) => crashTool(name, options)) });
  return defineSession({
    name: CRASH_AGENT,
    runner,
    policies: {
      read: { effect: "read" },
      idempotent_write: { effect: "idempotent_write" },
      // Needs approval by default (the policy table's default for its effect).
      non_idempotent_write: { effect: "non_idempotent_write" },
      non_idempotent_write_auto: { effect: "non_idempotent_write", needsApproval: false },
      idempotent_write_checked: {
        effect: "idempotent_write",
        reconcile: crashReconcile("idempotent_write_checked", options),
      },
      non_idempotent_write_checked: {
        effect: "non_idempotent_write",
        needsApproval: false,
        reconcile: crashReconcile("non_idempotent_write_checked", options),
      },
    },
    modelRetry: { initialDelayMs: 50, maxDelayMs: 200 },
    toolBackoff: { initialDelayMs: 20, maxDelayMs: 200 },
    cancelGraceMs: options.cancelGraceMs ?? 30,
  });
}
