/**
 * The run state this runner hands the engine: the SDK's serialized `RunState` without the part of
 * its `originalInput` that is the session's stored history. The SDK writes the turn's whole input
 * into its state; the engine already stores that history, so the state keeps only how many items
 * were left out and a hash of them, and `decode` hands them back from the history it is given. The
 * rest (the SDK's bookkeeping of the running turn, repetitive JSON) is gzipped at level 1 (about
 * 2.5x faster than the default level 6 for a few KB of this JSON, and a few percent larger; any
 * level reads back the same).
 *
 * Cost: the SDK serializes (and validates) only the state without the history; the history's JSON
 * is computed once per item object (history items are immutable data of the engine) and hashed;
 * a state restored from this codec remembers which of its items are the history, so its next
 * save compares object identities instead of JSON.
 */
import { createHash } from "node:crypto";
import { gunzipSync, gzipSync } from "node:zlib";
import type { AgentInputItem, RunState } from "@openai/agents";
import { errorGuard, StoredStateError, type HistoryItem, type StoredStateReason } from "@durable-agents/core";

const FORMAT = "durable-agents.openai-agents.run-state";
/** The `format` of this runner's `StoredStateError`s. */
export const RUN_STATE_FORMAT = "openai_agents_run_state";
export const RUN_STATE_VERSION = 1;
const VERSION = RUN_STATE_VERSION;

interface Envelope {
  readonly format: typeof FORMAT;
  readonly v: number;
  /** Leading items of the SDK state's `originalInput` left out (they are `history[0..p)`). */
  readonly p: number;
  /** sha256 of the JSON of the left-out items (`JSON.stringify` of the array), to refuse a history that does not match. */
  readonly h: string;
  /** The SDK's serialized state (as JSON), its `originalInput` without the first `p` items. */
  readonly s?: Record<string, unknown>;
  /** Or the same, as JSON text, gzipped, in base64. */
  readonly z?: string;
}

/**
 * Which leading items of a live state's `originalInput` are the session's history: `original` are
 * the state's item objects, `history` the history's item objects they equal (both `p` long), `h`
 * their hash as written in the envelope.
 */
export interface HistoryPrefix {
  readonly p: number;
  readonly h: string;
  readonly original: readonly unknown[];
  readonly history: readonly unknown[];
}

/**
 * A saved run state this runner cannot restore: not its envelope, of a newer version, damaged, or
 * saved with another history. A `StoredStateError` (code `stored_state`, format
 * `openai_agents_run_state`); the engine fails the turn at once, since another attempt reads the
 * same state.
 */
export class RunStateMismatchError extends StoredStateError {
  constructor(reason: StoredStateReason, version: unknown, message: string, options?: ErrorOptions) {
    super(RUN_STATE_FORMAT, reason, version, message, options);
  }
  static override isInstance = errorGuard<RunStateMismatchError>("stored_state", "RunStateMismatchError");
}

/** JSON of history item objects, computed once per object. */
const jsonCache = new WeakMap<object, string>();

function itemJson(item: unknown): string {
  if (typeof item !== "object" || item === null) return JSON.stringify(item) ?? "null";
  let json = jsonCache.get(item);
  if (json === undefined) {
    json = JSON.stringify(item) ?? "null";
    jsonCache.set(item, json);
  }
  return json;
}

/** sha256 of `JSON.stringify(items)`, fed item by item from the cached JSON. */
function hashItems(items: readonly unknown[]): string {
  const hash = createHash("sha256");
  hash.update("[");
  items.forEach((item, i) => {
    if (i > 0) hash.update(",");
    hash.update(itemJson(item));
  });
  hash.update("]");
  return hash.digest("hex");
}

const EMPTY_HASH = hashItems([]);

/** The key of the SDK state's snapshot of the turn's session input, as its JSON writes it. */
const SESSION_INPUT_KEY = '"currentTurnSessionInputItems":';

/** True when `a[i] === b[i]` for every `i < n` (both at least `n` long). */
function sameObjects(a: readonly unknown[], b: readonly unknown[], n: number): boolean {
  if (a.length < n || b.length < n) return false;
  for (let i = 0; i < n; i++) if (a[i] !== b[i]) return false;
  return true;
}

/** True when the first `n` history entries hold exactly the item objects `items`. */
export function historyHolds(history: readonly HistoryItem[], items: readonly unknown[], n: number): boolean {
  if (history.length < n || items.length < n) return false;
  for (let i = 0; i < n; i++) if (history[i]!.item !== items[i]) return false;
  return true;
}

/**
 * `state.toString()`. Its validation looks for each tool output's call by trying the candidates in
 * turn, and every candidate that is not the call throws (and catches) an error of its own: errors
 * that nobody sees, each capturing a stack trace. They are made without one (`toString` is
 * synchronous, so nothing else runs meanwhile); an error that does escape is made again with its
 * stack, by serializing once more with stack traces on.
 */
function serialize(state: RunState<any, any>): string {
  const limit = Error.stackTraceLimit;
  Error.stackTraceLimit = 0;
  try {
    return state.toString();
  } catch {
    Error.stackTraceLimit = limit;
    return state.toString();
  } finally {
    Error.stackTraceLimit = limit;
  }
}

export interface EncodedRunState {
  readonly runState: string;
  /** The history part of the state, for its next save (object identities). */
  readonly prefix: HistoryPrefix;
  /**
   * Whether the SDK wrote its snapshot of the turn's session input (`currentTurnSessionInputItems`)
   * into the state: only then does a state decoded from `runState` hold one.
   */
  readonly sessionInputSaved: boolean;
}

/**
 * `compact`: leave the history out and gzip the rest; otherwise wrap the SDK's state as it is.
 * `known`: what the state's restore established (its history part); the leading items are then
 * compared by identity, else item by item as JSON.
 */
export function encodeRunState(
  state: RunState<any, any>,
  history: readonly HistoryItem[],
  compact: boolean,
  known?: HistoryPrefix,
): EncodedRunState {
  const original = state._originalInput;
  let prefix: HistoryPrefix = { p: 0, h: EMPTY_HASH, original: [], history: [] };
  if (compact && Array.isArray(original)) {
    if (
      known &&
      known.p <= history.length &&
      sameObjects(original, known.original, known.p) &&
      historyHolds(history, known.history, known.p)
    ) {
      prefix = known;
    } else {
      const limit = Math.min(original.length, history.length);
      let p = 0;
      while (p < limit && JSON.stringify(original[p]) === itemJson(history[p]!.item)) p++;
      const items = history.slice(0, p).map((entry) => entry.item);
      prefix = { p, h: hashItems(items), original: original.slice(0, p), history: items };
    }
  }
  let sdkState: string;
  if (prefix.p > 0) {
    // The SDK serializes (and validates) only the rest; its state is left as it was.
    state._originalInput = (original as AgentInputItem[]).slice(prefix.p);
    try {
      sdkState = serialize(state);
    } finally {
      state._originalInput = original;
    }
  } else {
    sdkState = serialize(state);
  }
  const envelope: Envelope = {
    format: FORMAT,
    v: VERSION,
    p: prefix.p,
    h: prefix.h,
    ...(compact
      ? { z: gzipSync(sdkState, { level: 1 }).toString("base64") }
      : { s: JSON.parse(sdkState) as Record<string, unknown> }),
  };
  return { runState: JSON.stringify(envelope), prefix, sessionInputSaved: sdkState.includes(SESSION_INPUT_KEY) };
}

export interface DecodedRunState {
  /** The SDK's serialized state without the history part of its `originalInput`. */
  readonly sdkState: string;
  /** The history item objects (checked against the hash) that go in front of its `originalInput`. */
  readonly historyItems: readonly unknown[];
  readonly h: string;
}

export function decodeRunState(runState: string, history: readonly HistoryItem[]): DecodedRunState {
  let envelope: Envelope;
  try {
    envelope = JSON.parse(runState) as Envelope;
  } catch (error) {
    throw new RunStateMismatchError("malformed", undefined, "the saved run state is not JSON", { cause: error });
  }
  if (envelope?.format === FORMAT && Number.isInteger(envelope.v) && envelope.v > VERSION) {
    throw new RunStateMismatchError(
      "unknown_version",
      envelope.v,
      `the saved run state has version ${envelope.v}, newer than this runner reads (${VERSION}); upgrade to read it`,
    );
  }
  if (
    envelope?.format !== FORMAT ||
    envelope.v !== VERSION ||
    !Number.isInteger(envelope.p) ||
    envelope.p < 0 ||
    (typeof envelope.s !== "object" && typeof envelope.z !== "string")
  ) {
    throw new RunStateMismatchError(
      "malformed",
      envelope?.v,
      "the saved run state was not written by this runner (or by another version of it)",
    );
  }
  let sdkState: string;
  try {
    sdkState = envelope.s
      ? JSON.stringify(envelope.s)
      : gunzipSync(Buffer.from(envelope.z!, "base64")).toString("utf8");
    const parsed = JSON.parse(sdkState) as unknown;
    if (typeof parsed !== "object" || parsed === null || Array.isArray(parsed)) throw new Error("not a JSON object");
    if (envelope.p > 0 && !Array.isArray((parsed as Record<string, unknown>)["originalInput"]))
      throw new Error("its originalInput is not a list");
  } catch (error) {
    throw new RunStateMismatchError("malformed", envelope.v, "the saved run state is damaged", { cause: error });
  }
  if (envelope.p === 0) return { sdkState, historyItems: [], h: envelope.h };
  if (history.length < envelope.p) {
    throw new RunStateMismatchError(
      "malformed",
      envelope.v,
      `the saved run state needs ${envelope.p} history items, the session has ${history.length}`,
    );
  }
  const historyItems = history.slice(0, envelope.p).map((entry) => entry.item);
  if (hashItems(historyItems) !== envelope.h) {
    throw new RunStateMismatchError(
      "malformed",
      envelope.v,
      "the session's history no longer matches the history the run state was saved with",
    );
  }
  return { sdkState, historyItems, h: envelope.h };
}
