/**
 * The session object's meta is written with the head (one state entry per transition) or alone (a
 * write of events without a new head, a drive's end): readers take the newer of the two. Sessions
 * stored before the head carried its meta have a plain head and read their `meta` entry.
 */
import assert from "node:assert/strict";
import { describe, it } from "vitest";
import type { SessionMeta } from "../src/protocol.js";
import { currentMeta, type StoredHead } from "../src/session-object.js";

const meta = (version: number, lastEventSeq: number, running: boolean): SessionMeta => ({
  version,
  lastEventSeq,
  historyLength: 3,
  running,
  inboxCursor: 1,
});
const head = ($meta?: SessionMeta) => ({ sessionId: "s", ...($meta ? { $meta } : {}) }) as unknown as StoredHead;

describe("the current meta of a session", () => {
  it("is the meta entry when the head carries none (stored before), or the head's when there is no entry", () => {
    assert.deepEqual(currentMeta(meta(4, 10, false), head()), meta(4, 10, false));
    assert.deepEqual(currentMeta(null, head(meta(1, 2, false))), meta(1, 2, false));
    assert.equal(currentMeta(null, head()), null);
    assert.equal(currentMeta(null, null), null);
  });

  it("is the head's after a transition wrote a new head", () => {
    assert.deepEqual(currentMeta(meta(4, 10, false), head(meta(5, 12, true))), meta(5, 12, true));
  });

  it("is the entry's after events were written without a new head", () => {
    assert.deepEqual(currentMeta(meta(5, 15, true), head(meta(5, 12, true))), meta(5, 15, true));
  });

  it("is the entry's on a tie: a drive's end, written after its last head", () => {
    assert.deepEqual(currentMeta(meta(5, 12, false), head(meta(5, 12, true))), meta(5, 12, false));
  });
});
