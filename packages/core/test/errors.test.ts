import { describe, expect, it } from "vitest";
import {
  ConfigurationError,
  ContractViolationError,
  DurableAgentsError,
  errorCodes,
  InvalidInputError,
  ModelStepError,
  PolicyError,
  SessionNotFoundError,
  StoredStateError,
  ToolExecutionError,
} from "../src/index.js";

describe("typed errors", () => {
  it("are recognised by their marker and code, not by instanceof", () => {
    const error = new SessionNotFoundError("s1");
    expect(error.code).toBe("session_not_found");
    expect(SessionNotFoundError.isInstance(error)).toBe(true);
    expect(ToolExecutionError.isInstance(error)).toBe(false);
    // An error made by another copy of the package carries the same marker and code.
    const foreign = Object.assign(new Error("tool said no"), {
      [Symbol.for("durable-agents.error")]: true,
      code: "tool_execution",
    });
    expect(ToolExecutionError.isInstance(foreign)).toBe(true);
    expect(DurableAgentsError.isInstance(new Error("plain"))).toBe(false);
  });

  it("give each cause its own code: bad input, configuration, a broken contract, unreadable stored state", () => {
    const errors = [
      new InvalidInputError("bad"),
      new ConfigurationError("setup"),
      new ContractViolationError("store", "broke"),
      new StoredStateError("session_head", "unknown_version", 2, "newer"),
      new ModelStepError("gone"),
    ];
    expect(errors.map((e) => e.code)).toEqual([
      "invalid_input",
      "configuration",
      "contract_violation",
      "stored_state",
      "model_step",
    ]);
    for (const e of errors) expect(errorCodes).toContain(e.code);
    expect(new Set(errorCodes).size).toBe(errorCodes.length);
    const guards = [InvalidInputError, ConfigurationError, ContractViolationError, StoredStateError, ModelStepError];
    // Each guard recognises its own class only.
    expect(errors.map((e) => guards.map((g) => g.isInstance(e)))).toEqual(
      errors.map((_, i) => guards.map((_, j) => i === j)),
    );
  });

  it("recognise a PolicyError as a configuration mistake, and not every configuration mistake as a PolicyError", () => {
    const policy = new PolicyError("a typo");
    expect(policy.code).toBe("configuration");
    expect(policy.name).toBe("PolicyError");
    expect(PolicyError.isInstance(policy)).toBe(true);
    expect(ConfigurationError.isInstance(policy)).toBe(true);
    expect(PolicyError.isInstance(new ConfigurationError("a worker without sessions"))).toBe(false);
    expect(InvalidInputError.isInstance(policy)).toBe(false);
  });
});
