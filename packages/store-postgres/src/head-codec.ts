/**
 * How a session head is stored in the `head_z` column (migration 7): one format byte, then the head's
 * JSON compressed with raw deflate against a preset dictionary. A head is mostly the same key names
 * and values in every session (the turn's calls and step log repeat them), and PostgreSQL compresses
 * a value only once its row passes about 2 KB, so most commits wrote the head whole: about 2 KB of
 * WAL per step, of which a few hundred bytes are the session's own data. Compressed against the
 * dictionary, a head of a two-call turn is about 200 bytes.
 *
 * Format 1 is frozen: its dictionary must never change (the rows written with it are read back with
 * it). A better dictionary is a new format byte, read beside the old ones.
 */
import { deflateRawSync, inflateRawSync } from "node:zlib";
import { type SessionHead, StoredStateError } from "@durable-agents/core";

/** The format byte of a head compressed with `DICTIONARY_1`. */
export const HEAD_FORMAT_DEFLATE_1 = 1;

/**
 * Format 1's dictionary: the words a head is made of (statuses, effects, step kinds, the keys of a
 * turn, its calls and its step log) and a head of a generic two-call turn with every id left empty.
 * Deflate finds the longest matches at the end of a dictionary cheapest, so the head comes last. It
 * holds no application's tool name or text.
 */
const DICTIONARY_1 = Buffer.from(
  [
    '"awaiting_approval","pending","reconcile_pending","reconciling","failed","rejected","outcome_unknown",',
    '"cancelled","idempotent_write","non_idempotent_write","unclassified","CallSingleAttemptTool",',
    '"AwaitToolApproval","ReconcileCall","cancelling","completed","waiting_for_definition","unserved",',
    '"migration_failed","approval","attention","done","not_done","unknown","tools","idle",',
    '{"interruptId":"","kind":"approval","turnId":"turn-1","toolCallId":"call_","toolName":"","arguments":"{}",',
    '"reason":null,"effect":"non_idempotent_write","idempotencyKey":null,"turnCancelled":false}',
    '{"schemaVersion":1,"sessionId":"","agent":"","status":"running","turnCount":1,"historyLength":1,',
    '"turn":{"turnId":"turn-1","number":1,"userText":"","phase":"model","historyStart":0,"modelSteps":2,',
    '"modelAttempts":0,"modelRetryAt":null,"modelRunning":true,"runState":null,"calls":[{"toolCallId":"call_",',
    '"name":"","arguments":"{}","response":1,"effect":"read","step":"CallTool","needsApproval":false,',
    '"status":"succeeded","attempts":1,"maxAttempts":3,"idempotencyKey":"/turn-1/call_","interruptId":null,',
    '"retryAt":null,"lastError":null,"output":"","message":null,"reconcileAttempts":0,"reconcileMaxAttempts":0,',
    '"unknownReason":null,"reconciled":null,"reruns":0},{"toolCallId":"call_","name":"","arguments":"{}",',
    '"response":2,"effect":"read","step":"CallTool","needsApproval":false,"status":"succeeded","attempts":1,',
    '"maxAttempts":3,"idempotencyKey":"/turn-1/call_","interruptId":null,"retryAt":null,"lastError":null,',
    '"output":"","message":null,"reconcileAttempts":0,"reconcileMaxAttempts":0,"unknownReason":null,',
    '"reconciled":null,"reruns":0}],"steps":[{"step":"RunModel","status":"completed","attempt":1},',
    '{"step":"CallTool","status":"completed","attempt":1,"toolCallId":"call_","detail":"succeeded"},',
    '{"step":"ResumeTurn","status":"completed","attempt":0},{"step":"RunModel","status":"completed","attempt":1},',
    '{"step":"CallTool","status":"completed","attempt":1,"toolCallId":"call_","detail":"succeeded"},',
    '{"step":"ResumeTurn","status":"completed","attempt":0},{"step":"RunModel","status":"running","attempt":1}],',
    '"usage":{"modelCalls":2,"inputTokens":0,"outputTokens":0,"totalTokens":0},"finalText":null,"error":null,',
    '"cancellation":null,"steered":[],"joined":[],"followUp":null},"queue":[],"pendingInterrupts":[],',
    '"usage":{"modelCalls":2,"inputTokens":0,"outputTokens":0,"totalTokens":0},"inboxCursor":1,',
    '"createdAt":"2026-01-01T00:00:00.000Z","definition":{"fingerprint":"fp1-","waiting":null}}',
  ].join(""),
  "utf8",
);

/** The dictionary of format 1 (a copy), for tools that read the column themselves; a test pins its sha256. */
export function headDictionary1(): Buffer {
  return Buffer.from(DICTIONARY_1);
}

/** zlib's default level: about 20 µs for a 2 KB head, about 5 % smaller than levels 1 and 3 and no slower (measured on the peers row's heads). */
const LEVEL = 6;

/** The head's JSON (as the store writes it: the run state apart) in the `head_z` format. */
export function encodeHead(json: string): Buffer {
  const body = deflateRawSync(Buffer.from(json, "utf8"), { level: LEVEL, dictionary: DICTIONARY_1 });
  const out = Buffer.allocUnsafe(body.length + 1);
  out[0] = HEAD_FORMAT_DEFLATE_1;
  body.copy(out, 1);
  return out;
}

/**
 * A head read from `head_z`. An unknown format byte (a row written by a newer store) or bytes that do
 * not inflate to JSON are a `StoredStateError` (format `session_head_z`).
 */
export function decodeHead(stored: Uint8Array): SessionHead {
  const bytes = Buffer.from(stored.buffer, stored.byteOffset, stored.byteLength);
  if (bytes[0] !== HEAD_FORMAT_DEFLATE_1) {
    throw new StoredStateError(
      "session_head_z",
      "unknown_version",
      bytes[0] ?? null,
      `a session head stored in format ${bytes[0] ?? "(empty)"}; this store reads format ${HEAD_FORMAT_DEFLATE_1}`,
    );
  }
  try {
    return JSON.parse(inflateRawSync(bytes.subarray(1), { dictionary: DICTIONARY_1 }).toString("utf8")) as SessionHead;
  } catch (cause) {
    throw new StoredStateError(
      "session_head_z",
      "malformed",
      HEAD_FORMAT_DEFLATE_1,
      "a stored session head does not decode",
      {
        cause,
      },
    );
  }
}

/** A row's head: from `head_z` when it is set (a store made with `compressHeads: true`), else from `head` (json: the default, and rows written before migration 7). */
export function storedHead(row: {
  readonly head: SessionHead | null;
  readonly head_z?: Uint8Array | null;
}): SessionHead {
  if (row.head_z != null) return decodeHead(row.head_z);
  if (row.head == null) throw new StoredStateError("session_head", "malformed", null, "a session row holds no head");
  return row.head;
}
