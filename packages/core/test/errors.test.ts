import { describe, expect, it } from "vitest";
import { DurableAgentsError, SessionNotFoundError, ToolExecutionError } from "../src/index.js";

describe("typed errors", () => {
  it("are recognised by their marker and code, not by instanceof", () => {
    const error = new SessionNotFoundError("s1");
    expect(error.code).toBe("session_not_found");
    expect(SessionNotFoundError.isInstance(error)).toBe(true);
    expect(ToolExecutionError.isInstance(error)).toBe(false);
    // An error made by another copy of the package carries the same marker and code.
    const foreign = Object.assign(new Error("tool said no"), { [Symbol.for("durable-agents.error")]: true, code: "tool_execution" });
    expect(ToolExecutionError.isInstance(foreign)).toBe(true);
    expect(DurableAgentsError.isInstance(new Error("plain"))).toBe(false);
  });
});
