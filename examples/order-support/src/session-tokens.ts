/**
 * Session tokens: the HMAC-SHA256 of the session ID under a server key. Whoever started a session
 * gets its token, and every later call on the session must present it. The server picks session IDs,
 * so a caller cannot aim at another caller's session without its token.
 */
import { createHmac, randomBytes, timingSafeEqual } from "node:crypto";

export type TokenCheck = "ok" | "missing" | "wrong";

export class SessionTokens {
  readonly #key: Buffer;

  /** `key`: the signing key (a string is used as UTF-8 bytes). Without one, a random 32-byte key. */
  constructor(key?: string | Uint8Array) {
    if (key === undefined) this.#key = randomBytes(32);
    else this.#key = typeof key === "string" ? Buffer.from(key, "utf8") : Buffer.from(key);
    if (this.#key.length === 0) throw new RangeError("the session key must not be empty");
  }

  /** The token of a session ID (base64url, 43 characters). */
  sign(sessionId: string): string {
    return createHmac("sha256", this.#key).update(sessionId, "utf8").digest("base64url");
  }

  /** Compares in constant time; says whether the token was missing or wrong. */
  check(sessionId: string, token: string | null | undefined): TokenCheck {
    if (token === undefined || token === null || token === "") return "missing";
    const expected = Buffer.from(this.sign(sessionId), "utf8");
    const given = Buffer.from(token, "utf8");
    return given.length === expected.length && timingSafeEqual(given, expected) ? "ok" : "wrong";
  }
}
