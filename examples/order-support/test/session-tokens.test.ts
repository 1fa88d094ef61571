import { createHmac } from "node:crypto";
import { describe, expect, it } from "vitest";
import { SessionTokens } from "../src/session-tokens.js";

describe("SessionTokens", () => {
  it("signs a session ID with HMAC-SHA256 under the key", () => {
    const tokens = new SessionTokens("k3y");
    const expected = createHmac("sha256", "k3y").update("order-support-abc").digest("base64url");
    expect(tokens.sign("order-support-abc")).toBe(expected);
    expect(tokens.check("order-support-abc", expected)).toBe("ok");
  });

  it("tells a missing token from a wrong one", () => {
    const tokens = new SessionTokens("k3y");
    const token = tokens.sign("a");
    expect(tokens.check("a", undefined)).toBe("missing");
    expect(tokens.check("a", "")).toBe("missing");
    expect(tokens.check("b", token)).toBe("wrong");
    expect(tokens.check("a", `${token}x`)).toBe("wrong");
    expect(tokens.check("a", new SessionTokens("other").sign("a"))).toBe("wrong");
  });

  it("makes a random key when none is given", () => {
    expect(new SessionTokens().sign("a")).not.toBe(new SessionTokens().sign("a"));
    expect(() => new SessionTokens("")).toThrow(RangeError);
  });
});
