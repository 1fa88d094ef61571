/**
 * What every store refuses before it touches storage. A backend calls these at the top of each
 * operation, so the same malformed input gets the same `InvalidInputError` from every store and
 * changes nothing.
 */
import { InvalidInputError } from "./errors.js";
import type { EventBody, HistoryItem, InboxEntry, InboxItem, SessionHead } from "./schemas.js";
import type {
  AcquireLeaseOptions,
  Commit,
  DefinitionAnnouncement,
  Lease,
  NewSession,
  StoreNotification,
} from "./store.js";

/** The longest session ID every store accepts (PostgreSQL's notifications name the session in an 8000-byte payload). */
export const maxSessionIdLength = 1000;

export function checkSessionId(sessionId: unknown): asserts sessionId is string {
  if (typeof sessionId !== "string" || sessionId.length === 0) {
    throw new InvalidInputError("a session ID is a non-empty string", ["sessionId"]);
  }
}

export function checkCount(what: string, value: unknown): void {
  if (!Number.isSafeInteger(value) || (value as number) < 0) {
    throw new InvalidInputError(`${what} is a non-negative integer`, [what]);
  }
}

export function checkTtl(ttlMs: unknown): void {
  if (typeof ttlMs !== "number" || !Number.isFinite(ttlMs) || ttlMs <= 0) {
    throw new InvalidInputError("ttlMs is a positive number of milliseconds", ["ttlMs"]);
  }
}

function checkWorker(workerId: unknown): void {
  if (typeof workerId !== "string" || workerId.length === 0) {
    throw new InvalidInputError("a worker ID is a non-empty string", ["workerId"]);
  }
}

export function checkLease(lease: Lease): void {
  checkSessionId(lease?.sessionId);
  checkWorker(lease.workerId);
  checkCount("fence", lease.fence);
}

/** Checks a `findWork` request: a lease request, and the sessions to pass over. */
export function checkWorkRequest(options: AcquireLeaseOptions & { readonly skip?: readonly string[] }): void {
  checkLeaseRequest(options);
  if (
    options.skip !== undefined &&
    (!Array.isArray(options.skip) || options.skip.some((id) => typeof id !== "string"))
  ) {
    throw new InvalidInputError("skip is an array of session IDs", ["skip"]);
  }
}

export function checkLeaseRequest(options: AcquireLeaseOptions): void {
  checkWorker(options?.workerId);
  checkTtl(options.ttlMs);
  if (!Array.isArray(options.agents) || options.agents.some((agent) => typeof agent !== "string")) {
    throw new InvalidInputError("agents is a list of agent names");
  }
  for (const what of ["fingerprints", "migrating"] as const) {
    const list: unknown = options[what];
    if (list !== undefined && (!Array.isArray(list) || list.some((f) => typeof f !== "string" || f.length === 0))) {
      throw new InvalidInputError(`${what} is a list of definition fingerprints`, [what]);
    }
  }
}

/** Checks an `announceDefinitions` argument. */
export function checkAnnouncement(announcement: DefinitionAnnouncement): void {
  checkWorker(announcement?.workerId);
  checkTtl(announcement.ttlMs);
  const definitions: unknown = announcement.definitions;
  if (
    !Array.isArray(definitions) ||
    definitions.some(
      (d) =>
        typeof d !== "object" ||
        d === null ||
        typeof d.agent !== "string" ||
        d.agent.length === 0 ||
        typeof d.fingerprint !== "string" ||
        d.fingerprint.length === 0 ||
        (d.role !== "serves" && d.role !== "migrates"),
    )
  ) {
    throw new InvalidInputError('definitions is a list of { agent, fingerprint, role: "serves" | "migrates" }', [
      "definitions",
    ]);
  }
}

/**
 * The pin columns a store keeps next to a head: the fingerprint the session is pinned to (`""` while
 * it is not pinned, so that a lease query is one `IN` list on an indexed column) and whether it waits
 * for its definition.
 */
export function pinColumns(head: SessionHead): { fingerprint: string; waiting: boolean } {
  const pin = (head as { definition?: { fingerprint?: unknown; waiting?: unknown } | null }).definition;
  const fingerprint = typeof pin?.fingerprint === "string" ? pin.fingerprint : "";
  return { fingerprint, waiting: fingerprint !== "" && pin?.waiting != null };
}

/**
 * What a lease request takes: `served` (its fingerprints, with `""` for sessions not pinned yet) and
 * `migrating` (taken only while nobody serves them); null when it takes every pin.
 */
export function leaseFingerprints(options: AcquireLeaseOptions): { served: string[]; migrating: string[] } | null {
  if (options.fingerprints === undefined) return null;
  const served = ["", ...options.fingerprints];
  return { served, migrating: (options.migrating ?? []).filter((f) => !served.includes(f)) };
}

function checkHead(head: SessionHead | undefined, sessionId: string | undefined): asserts head is SessionHead {
  if (typeof head !== "object" || head === null) throw new InvalidInputError("head is an object", ["head"]);
  checkSessionId(head.sessionId);
  if (sessionId !== undefined && head.sessionId !== sessionId) {
    throw new InvalidInputError(`head is of session "${head.sessionId}", not "${sessionId}"`, ["head.sessionId"]);
  }
  if (typeof head.agent !== "string" || head.agent.length === 0) {
    throw new InvalidInputError("head.agent is a non-empty string", ["head.agent"]);
  }
  checkCount("head.inboxCursor", head.inboxCursor);
}

function checkEvents(events: readonly EventBody[]): readonly EventBody[] {
  if (!Array.isArray(events)) throw new InvalidInputError("events is an array", ["events"]);
  events.forEach((event, index) => {
    if (typeof event?.type !== "string" || typeof event.data !== "object" || event.data === null) {
      throw new InvalidInputError(`event ${index} is not { type, data }`, [`events[${index}]`]);
    }
  });
  return events;
}

export function checkInboxEntry(entry: InboxEntry): void {
  const kind: unknown = entry?.kind;
  if (kind !== "message" && kind !== "resolution" && kind !== "cancel" && kind !== "steer" && kind !== "attention") {
    throw new InvalidInputError(
      "an inbox entry is a message, a resolution, a cancellation, a steered message or an attention resolution",
      ["entry.kind"],
    );
  }
}

export function checkDedupeKey(dedupeKey: unknown): void {
  if (dedupeKey !== null && (typeof dedupeKey !== "string" || dedupeKey.length === 0)) {
    throw new InvalidInputError("a dedupe key is a non-empty string or null", ["dedupeKey"]);
  }
}

/** Checks a `createSession` argument; returns its head and events. */
export function checkNewSession(session: NewSession): { head: SessionHead; events: readonly EventBody[] } {
  const head = session?.head;
  checkHead(head, undefined);
  if (head.sessionId.length > maxSessionIdLength) {
    throw new InvalidInputError(`a session ID has at most ${maxSessionIdLength} characters`, ["head.sessionId"]);
  }
  const events = checkEvents(session.events);
  if (session.inbox !== undefined) {
    checkInboxEntry(session.inbox?.entry);
    checkDedupeKey(session.inbox.dedupeKey);
  }
  return { head, events };
}

/** Checks a `commit` argument; returns its events and the history to append (`[]` when absent). */
export function checkCommit(commit: Commit): { events: readonly EventBody[]; history: readonly HistoryItem[] } {
  checkSessionId(commit?.sessionId);
  checkCount("fence", commit.fence);
  checkCount("expectedVersion", commit.expectedVersion);
  const events = checkEvents(commit.events);
  const history = commit.appendHistory ?? [];
  if (!Array.isArray(history)) throw new InvalidInputError("appendHistory is not an array");
  if (commit.head === undefined) {
    if (history.length > 0) throw new InvalidInputError("appendHistory needs a head", ["appendHistory without head"]);
  } else {
    checkHead(commit.head, commit.sessionId);
    if (typeof commit.runnable !== "boolean") {
      throw new InvalidInputError("a commit with a head says whether the session is runnable", [
        "runnable must be a boolean when head is given",
      ]);
    }
  }
  if (commit.claim !== undefined) checkClaim(commit);
  return { events, history };
}

/** A claim names its worker, takes a fence past the first, and says for how long (`leaseTtlMs`). */
function checkClaim(commit: Commit): void {
  checkWorker(commit.claim?.workerId);
  if (commit.fence < 1) throw new InvalidInputError("a claim's fence is at least 1", ["fence"]);
  if (commit.leaseTtlMs === undefined) {
    throw new InvalidInputError("a claim says how long the lease lasts", ["leaseTtlMs is required with claim"]);
  }
  checkTtl(commit.leaseTtlMs);
}

/** Checks the cursor and page size of `readEvents`. */
export function checkEventPage(sessionId: unknown, afterSeq: unknown, limit: unknown): void {
  checkSessionId(sessionId);
  checkCount("afterSeq", afterSeq);
  if (!Number.isSafeInteger(limit) || (limit as number) < 1) throw new InvalidInputError("limit is a positive integer");
}

/**
 * The `inbox` notice of one stored entry that carries it (`StoreNotification.entries`), as
 * `readInbox` reads it: `entry` is the entry's stored JSON, parsed the first time a listener asks.
 * Send it only once every earlier entry of the session is stored.
 */
export function carriedInboxNotice(sessionId: string, entry: string, seq: number): StoreNotification {
  let entries: InboxItem[] | undefined;
  return {
    kind: "inbox",
    sessionId,
    get entries(): InboxItem[] {
      entries ??= [{ ...(JSON.parse(entry) as InboxEntry), seq }];
      return entries;
    },
  };
}
