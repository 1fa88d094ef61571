import { z } from "zod";
import { PolicyError } from "./errors.js";

export const toolEffects = ["read", "idempotent_write", "non_idempotent_write", "unclassified"] as const;
export const ToolEffect = z.enum(toolEffects);
export type ToolEffect = z.infer<typeof ToolEffect>;

/** What the application declares for one tool, keyed by tool name. */
export const ToolPolicy = z.strictObject({
  effect: ToolEffect,
  /** Overrides the effect's default approval. A tool the framework marks as needing approval waits whatever this says. */
  needsApproval: z.boolean().optional(),
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
    parsed[name] = result.data;
  }
  return parsed;
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
