/**
 * The one path by which core reads a stored session: the driver, the worker and the client all load
 * through `loadStoredSession`, so every head they use went through the versioned parser
 * (`parseSessionHead`). A store returns the head as it stored it; it need not parse it.
 */
import { ContractViolationError } from "./errors.js";
import { parseSessionHead } from "./schemas.js";
import type { SessionStore, StoredSession } from "./store.js";

const isCount = (value: unknown): value is number => Number.isSafeInteger(value) && (value as number) >= 0;

/**
 * Loads a session and parses its head. Null when the store has no such session. Throws
 * `StoredStateError` for a head that is damaged or of an unknown schema version, and
 * `ContractViolationError` (party `store`) for an answer the store contract rules out.
 */
export async function loadStoredSession(store: SessionStore, sessionId: string): Promise<StoredSession | null> {
  const stored = await store.loadSession(sessionId);
  if (stored === null || stored === undefined) return null;
  return parseStoredSession(stored, sessionId, `loadSession("${sessionId}")`);
}

/**
 * The same checks and parse for a session a store answered another way (`acquireLeaseWithSession`);
 * `answer` names the call in the error.
 */
export function parseStoredSession(stored: StoredSession, sessionId: string, answer: string): StoredSession {
  if (typeof stored !== "object" || stored === null || !isCount(stored.version) || !isCount(stored.lastEventSeq)) {
    throw new ContractViolationError("store", `${answer} answered no { head, version, lastEventSeq } of counts`);
  }
  const head = parseSessionHead(stored.head);
  if (head.sessionId !== sessionId) {
    throw new ContractViolationError("store", `${answer} answered the head of session "${head.sessionId}"`);
  }
  return { head, version: stored.version, lastEventSeq: stored.lastEventSeq };
}
