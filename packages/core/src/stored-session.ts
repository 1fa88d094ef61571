/**
 * The one path by which core reads a stored session: the driver, the worker and the client all load
 * through `loadStoredSession`, so every head they use went through the versioned parser
 * (`parseSessionHead`). A store returns the head as it stored it; it need not parse it.
 */
import { ContractViolationError } from "./errors.js";
import { sameData } from "./machine/state.js";
import { parseSessionHead, type SessionHead } from "./schemas.js";
import type { SessionStore, StoredSession } from "./store.js";

const isCount = (value: unknown): value is number => Number.isSafeInteger(value) && (value as number) >= 0;

/**
 * Loads a session and parses its head (through `heads`, when given). Null when the store has no
 * such session. Throws
 * `StoredStateError` for a head that is damaged or of an unknown schema version, and
 * `ContractViolationError` (party `store`) for an answer the store contract rules out.
 */
export async function loadStoredSession(
  store: SessionStore,
  sessionId: string,
  heads?: HeadCache,
): Promise<StoredSession | null> {
  const stored = await store.loadSession(sessionId);
  if (stored === null || stored === undefined) return null;
  const answer = `loadSession("${sessionId}")`;
  return heads ? heads.parse(stored, sessionId, answer) : parseStoredSession(stored, sessionId, answer);
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

/**
 * A worker's heads of the sessions it committed, each with the version its commit made. Leasing a
 * session again loads it as always (`loadSession`), and when the store answers that very version
 * with a head equal to the one committed (a deep compare of JSON data), the committed head is used
 * instead of parsing the stored one again: it is what the drive that committed it held, itself the
 * machine's transition of a parsed head, and a parse of equal data gives equal data. Any other
 * answer (another version, a head that differs, a damaged or newer one) goes through
 * `parseStoredSession`. Heads are data nobody mutates (the machine copies before it changes one).
 * Least recently used sessions are dropped beyond `maxSessions`.
 */
export class HeadCache {
  private readonly entries = new Map<string, { readonly head: SessionHead; readonly version: number }>();

  constructor(private readonly maxSessions = 256) {}

  /** Records the head a commit of this version stored. */
  remember(sessionId: string, head: SessionHead, version: number): void {
    this.entries.delete(sessionId);
    this.entries.set(sessionId, { head, version });
    if (this.entries.size > this.maxSessions) {
      for (const id of this.entries.keys()) {
        this.entries.delete(id);
        break;
      }
    }
  }

  /** `parseStoredSession`, with the committed head when the store answers it unchanged. */
  parse(stored: StoredSession, sessionId: string, answer: string): StoredSession {
    const cached = this.entries.get(sessionId);
    if (
      cached !== undefined &&
      typeof stored === "object" &&
      stored !== null &&
      stored.version === cached.version &&
      isCount(stored.lastEventSeq) &&
      sameData(stored.head, cached.head)
    ) {
      return { head: cached.head, version: stored.version, lastEventSeq: stored.lastEventSeq };
    }
    this.entries.delete(sessionId);
    return parseStoredSession(stored, sessionId, answer);
  }
}
