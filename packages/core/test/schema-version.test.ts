import { readFileSync } from "node:fs";
import { describe, expect, it } from "vitest";
import { parseSessionHead, SESSION_SCHEMA_VERSION, supportedSessionSchemaVersions } from "../src/index.js";

// Fixtures are written by released versions and never edited: a stored session must load after an upgrade.
const fixture = (name: string): unknown => JSON.parse(readFileSync(new URL(`./fixtures/${name}`, import.meta.url), "utf8"));

describe("stored session state", () => {
  it("loads a version 1 head written by 0.1.0", () => {
    const head = parseSessionHead(fixture("session-head-v1.json"));
    expect(head.schemaVersion).toBe(1);
    expect(head.status).toBe("awaiting_approval");
    expect(head.pendingInterrupts[0]?.interruptId).toBe("turn-1-1-1");
    expect(head.turn?.calls[0]?.idempotencyKey).toBe("fixture-session/turn-1/call_1");
    expect(supportedSessionSchemaVersions).toContain(SESSION_SCHEMA_VERSION);
  });

  it("refuses a head of an unknown schema version", () => {
    const head = fixture("session-head-v1.json") as Record<string, unknown>;
    expect(() => parseSessionHead({ ...head, schemaVersion: 99 })).toThrow();
  });
});
