import { z } from "zod";
import { PolicyError } from "./errors.js";

export const toolEffects = ["read", "idempotent_write", "non_idempotent_write", "unclassified"] as const;
export const ToolEffect = z.enum(toolEffects);
export type ToolEffect = z.infer<typeof ToolEffect>;

/** What a tool's `reconcile` is given: the call whose outcome is in doubt, and one attempt of the check. */
export interface ReconcileInput {
  /** The call's idempotency key (`<sessionId>/<turnId>/<toolCallId>`), the one every attempt of the call saw. */
  readonly idempotencyKey: string;
  /** The call's arguments, parsed from the model's JSON text (the text itself when it is not JSON). */
  readonly arguments: unknown;
  /** 1-based attempt of this check, counted durably (a check is retried like a `read`). */
  readonly attempt: number;
  /** Aborted when the engine is losing the session (a lost lease, a process ending); a turn's cancellation does not abort a check. */
  readonly signal: AbortSignal;
  readonly sessionId: string;
  readonly turnId: string;
  readonly toolCallId: string;
  readonly toolName: string;
}

/**
 * What a check found: `done` (the call took effect; `output` is what the model is told, as if the
 * call had returned it), `not_done` (it did not take effect), or `unknown` (the check cannot tell).
 */
export type ReconcileResult =
  | { readonly status: "done"; readonly output: string }
  | { readonly status: "not_done" }
  | { readonly status: "unknown" };

/**
 * How a tool finds out whether a call whose outcome is in doubt took effect (by its idempotency key,
 * or by reading the state the call changes). It must only read: it runs as a step of its own and is
 * retried like a `read`. Throwing counts as a failed attempt of the check.
 */
export type Reconcile = (input: ReconcileInput) => Promise<ReconcileResult> | ReconcileResult;

/** What the application declares for one tool, keyed by tool name. */
export const ToolPolicy = z.strictObject({
  effect: ToolEffect,
  /** Overrides the effect's default approval. A tool the framework marks as needing approval waits whatever this says. */
  needsApproval: z.boolean().optional(),
  /** Asked before a call is left `outcome_unknown` (writes only: a `read` is never `outcome_unknown`). */
  reconcile: z
    .custom<Reconcile>((value) => typeof value === "function", { message: "reconcile must be a function" })
    .optional(),
});
export type ToolPolicy = z.infer<typeof ToolPolicy>;
export type ToolPolicies = Record<string, ToolPolicy>;

export type ToolStepKind = "CallTool" | "CallSingleAttemptTool";

/** One row of the tool-effect policy table (DESIGN §4). */
export interface EffectRule {
  readonly effect: ToolEffect;
  readonly step: ToolStepKind;
  readonly maxAttempts: number;
  /** The outcome recorded when every attempt failed. */
  readonly exhausted: "failed" | "outcome_unknown";
  /** What happens to a call found running after its worker died. */
  readonly onCrash: "rerun" | "outcome_unknown";
  readonly approvalByDefault: boolean;
}

export const policyTable: Readonly<Record<ToolEffect, EffectRule>> = Object.freeze({
  read: {
    effect: "read",
    step: "CallTool",
    maxAttempts: 3,
    exhausted: "failed",
    onCrash: "rerun",
    approvalByDefault: false,
  },
  idempotent_write: {
    effect: "idempotent_write",
    step: "CallTool",
    maxAttempts: 3,
    exhausted: "outcome_unknown",
    onCrash: "rerun",
    approvalByDefault: false,
  },
  non_idempotent_write: {
    effect: "non_idempotent_write",
    step: "CallSingleAttemptTool",
    maxAttempts: 1,
    exhausted: "outcome_unknown",
    onCrash: "outcome_unknown",
    approvalByDefault: true,
  },
  unclassified: {
    effect: "unclassified",
    step: "CallSingleAttemptTool",
    maxAttempts: 1,
    exhausted: "outcome_unknown",
    onCrash: "outcome_unknown",
    approvalByDefault: true,
  },
});

export const defaultToolEffect: ToolEffect = "unclassified";

/**
 * The idempotency key of one tool call, whatever its effect (so it is not a column of the table).
 * Every attempt of the call, and every rerun after a crash, sees the same key; it matters most to an
 * `idempotent_write`, the one effect that is retried.
 */
export function idempotencyKey(sessionId: string, turnId: string, toolCallId: string): string {
  return `${sessionId}/${turnId}/${toolCallId}`;
}

/** What a runner says about one of its tools. */
export interface ToolDescription {
  readonly name: string;
  /** The effect a tool declares about itself (e.g. MCP `readOnlyHint`), used when no policy names it. */
  readonly defaultEffect?: ToolEffect;
  /** `always`: the framework marks it as needing approval; `per_call`: decided for each call by the framework. */
  readonly approval: "always" | "per_call" | "never";
}

/**
 * Checks a policy map against a runner's tools: every policy must name a tool, and every policy must
 * have the documented shape. Throws `PolicyError`; returns the parsed policies.
 */
export function validatePolicies(tools: readonly ToolDescription[], policies: unknown): ToolPolicies {
  if (policies === undefined) return {};
  if (typeof policies !== "object" || policies === null || Array.isArray(policies)) {
    throw new PolicyError("tool policies must be an object keyed by tool name");
  }
  const names = new Set(tools.map((tool) => tool.name));
  const parsed: ToolPolicies = {};
  for (const [name, policy] of Object.entries(policies)) {
    if (!names.has(name)) {
      const known = [...names].sort().join(", ") || "none";
      throw new PolicyError(`the policy for "${name}" names no tool of the agent (its tools: ${known})`);
    }
    const result = ToolPolicy.safeParse(policy);
    if (!result.success) {
      throw new PolicyError(
        `the policy for "${name}" is malformed: ${result.error.issues.map((i) => i.message).join("; ")}`,
      );
    }
    if (result.data.reconcile !== undefined && result.data.effect === "read") {
      throw new PolicyError(
        `the policy for "${name}" declares reconcile on a read: a read is never outcome_unknown, so it is never reconciled`,
      );
    }
    parsed[name] = result.data;
  }
  return parsed;
}

/** Whether the session's policies give this tool a `reconcile`. */
export function hasReconcile(policies: ToolPolicies, toolName: string): boolean {
  return typeof policies[toolName]?.reconcile === "function";
}

/** The effect and approval that apply to one requested call. */
export function resolveCallPolicy(
  toolName: string,
  policies: ToolPolicies,
  tools: readonly ToolDescription[],
  frameworkNeedsApproval: boolean,
): { effect: ToolEffect; needsApproval: boolean } {
  const policy = policies[toolName];
  const effect = policy?.effect ?? tools.find((tool) => tool.name === toolName)?.defaultEffect ?? defaultToolEffect;
  const needsApproval = frameworkNeedsApproval || (policy?.needsApproval ?? policyTable[effect].approvalByDefault);
  return { effect, needsApproval };
}
