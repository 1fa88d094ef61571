import { readFileSync } from "node:fs";
import { describe, expect, it } from "vitest";
import {
  parseSessionHead,
  SESSION_SCHEMA_VERSION,
  StoredStateError,
  supportedSessionSchemaVersions,
} from "../src/index.js";

// Fixtures are written by released versions and never edited: a stored session must load after an upgrade.
const fixture = (name: string): unknown =>
  JSON.parse(readFileSync(new URL(`./fixtures/${name}`, import.meta.url), "utf8"));

describe("stored session state", () => {
  it("loads a version 1 head written by 0.1.0", () => {
    const head = parseSessionHead(fixture("session-head-v1.json"));
    expect(head.schemaVersion).toBe(1);
    expect(head.status).toBe("awaiting_approval");
    expect(head.pendingInterrupts[0]?.interruptId).toBe("turn-1-1-1");
    expect(head.turn?.calls[0]?.idempotencyKey).toBe("fixture-session/turn-1/call_1");
    expect(supportedSessionSchemaVersions).toContain(SESSION_SCHEMA_VERSION);
  });

  it("refuses a head of a newer or unknown schema version with a typed error", () => {
    const head = fixture("session-head-v1.json") as Record<string, unknown>;
    const refusal = (value: unknown): unknown => {
      try {
        parseSessionHead(value);
      } catch (error) {
        return error;
      }
      return "accepted";
    };
    const newer = refusal({ ...head, schemaVersion: 2 });
    expect(StoredStateError.isInstance(newer)).toBe(true);
    expect(newer).toMatchObject({
      code: "stored_state",
      format: "session_head",
      reason: "unknown_version",
      version: 2,
    });
    expect(refusal({ ...head, schemaVersion: 99 })).toMatchObject({ reason: "unknown_version", version: 99 });
    expect(refusal({ ...head, schemaVersion: 0 })).toMatchObject({
      code: "stored_state",
      reason: "unknown_version",
      version: 0,
    });
    const { schemaVersion: _, ...unversioned } = head;
    expect(refusal(unversioned)).toMatchObject({ code: "stored_state", reason: "malformed" });
    expect(refusal(null)).toMatchObject({ code: "stored_state", reason: "malformed" });
  });

  it("refuses a damaged head of a known version with a typed error naming what is wrong", () => {
    const head = fixture("session-head-v1.json") as Record<string, unknown>;
    let caught: unknown;
    try {
      parseSessionHead({ ...head, status: "dancing" });
    } catch (error) {
      caught = error;
    }
    expect(StoredStateError.isInstance(caught)).toBe(true);
    expect(caught).toMatchObject({ reason: "malformed", version: 1 });
    expect((caught as Error).message).toContain("status");
  });
});
