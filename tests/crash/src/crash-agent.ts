/**
 * The agent every crash suite runs: core's framework-free `ScriptedRunner` (the user message is a
 * script of `call <tool> <json>` lines and `then` separators) with four tools, one per row of the
 * policy table that matters here. Every tool writes its execution to its execution log before it
 * works, sleeps a few milliseconds (so a SIGKILL can land mid-call), and fails at random.
 */
import { randomInt } from "node:crypto";
import {
  currentToolCall,
  defineSession,
  ToolExecutionError,
  type SessionDefinition,
  type ToolEffect,
} from "@durable-agents/core";
import { ScriptedRunner, type ConformanceTool } from "@durable-agents/core/testing";
import type { ExecutionLog, ExecutionResult } from "./execution-log.js";

export const CRASH_AGENT = "crash-agent";

/** The tools, their effect, and whether a person must approve each call. */
export const crashTools = {
  read: { effect: "read", needsApproval: false, maxExecutions: 3 },
  idempotent_write: { effect: "idempotent_write", needsApproval: false, maxExecutions: 3 },
  non_idempotent_write: { effect: "non_idempotent_write", needsApproval: true, maxExecutions: 1 },
  non_idempotent_write_auto: { effect: "non_idempotent_write", needsApproval: false, maxExecutions: 1 },
} as const satisfies Record<string, { effect: ToolEffect; needsApproval: boolean; maxExecutions: number }>;

export type CrashToolName = keyof typeof crashTools;
export const crashToolNames = Object.keys(crashTools) as CrashToolName[];

export interface CrashAgentOptions {
  /** Where the tools record their executions (never through the store). */
  readonly executions: ExecutionLog;
  /** Chance that one execution fails. Default 0.2. */
  readonly failureRate?: number;
  /** Longest sleep of a tool, in ms. Default 50. */
  readonly maxSleepMs?: number;
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

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
      await sleep(randomInt(2, maxSleepMs + 1));
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
      return `${name} ${String(args.key)} done on attempt ${call.attempt}`;
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
    },
    modelRetry: { initialDelayMs: 50, maxDelayMs: 200 },
    toolBackoff: { initialDelayMs: 20, maxDelayMs: 200 },
  });
}
