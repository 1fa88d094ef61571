import { describe, expect, it } from "vitest";
import { idempotencyKey, PolicyError, policyTable } from "../src/index.js";
import { resolveCallPolicy, validatePolicies, type ToolDescription } from "../src/engine.js";

const tools: ToolDescription[] = [
  { name: "look_up_order", approval: "never" },
  { name: "cancel_order", approval: "never" },
  { name: "mcp_read", approval: "never", defaultEffect: "read" },
  { name: "guarded", approval: "always" },
];

describe("the tool-effect policy table", () => {
  it("matches DESIGN §4 row by row", () => {
    expect(
      Object.values(policyTable).map((r) => [
        r.effect,
        r.step,
        r.maxAttempts,
        r.exhausted,
        r.onCrash,
        r.approvalByDefault,
      ]),
    ).toEqual([
      ["read", "CallTool", 3, "failed", "rerun", false],
      ["idempotent_write", "CallTool", 3, "outcome_unknown", "rerun", false],
      ["non_idempotent_write", "CallSingleAttemptTool", 1, "outcome_unknown", "outcome_unknown", true],
      ["unclassified", "CallSingleAttemptTool", 1, "outcome_unknown", "outcome_unknown", true],
    ]);
    // Every column is one the machine reads; the idempotency key is every call's, so it is no column.
    for (const rule of Object.values(policyTable)) {
      expect(Object.keys(rule).sort()).toEqual([
        "approvalByDefault",
        "effect",
        "exhausted",
        "maxAttempts",
        "onCrash",
        "step",
      ]);
    }
    expect(idempotencyKey("s1", "turn-2", "call_9")).toBe("s1/turn-2/call_9");
  });

  it("refuses a policy that names no tool, or a malformed one", () => {
    expect(() => validatePolicies(tools, { look_up_ordr: { effect: "read" } })).toThrow(
      expect.toSatisfy(PolicyError.isInstance),
    );
    expect(() => validatePolicies(tools, { look_up_order: { effect: "reads" } })).toThrow(/malformed/);
    expect(() => validatePolicies(tools, { look_up_order: { effect: "read", extra: 1 } })).toThrow(
      expect.toSatisfy(PolicyError.isInstance),
    );
    expect(() => validatePolicies(tools, [])).toThrow(expect.toSatisfy(PolicyError.isInstance));
    expect(validatePolicies(tools, { look_up_order: { effect: "read" } })).toEqual({
      look_up_order: { effect: "read" },
    });
  });

  it("defaults to unclassified, honours declared effects and approval flags", () => {
    const policies = validatePolicies(tools, {
      look_up_order: { effect: "read" },
      cancel_order: { effect: "non_idempotent_write", needsApproval: false },
    });
    expect(resolveCallPolicy("look_up_order", policies, tools, false)).toEqual({
      effect: "read",
      needsApproval: false,
    });
    expect(resolveCallPolicy("cancel_order", policies, tools, false)).toEqual({
      effect: "non_idempotent_write",
      needsApproval: false,
    });
    expect(resolveCallPolicy("guarded", policies, tools, false)).toEqual({
      effect: "unclassified",
      needsApproval: true,
    });
    expect(resolveCallPolicy("mcp_read", policies, tools, false)).toEqual({ effect: "read", needsApproval: false });
    // The framework's own approval flag wins whatever the effect.
    expect(resolveCallPolicy("look_up_order", policies, tools, true)).toEqual({ effect: "read", needsApproval: true });
  });
});
