/**
 * The run state this runner hands the engine: the SDK's serialized `RunState` without the part of
 * its `originalInput` that is the session's stored history. The SDK writes the turn's whole input
 * into its state; the engine already stores that history, so the state keeps only how many items
 * were left out and a hash of them, and `decode` puts them back from the history it is given. The
 * rest (the SDK's bookkeeping of the running turn, repetitive JSON) is gzipped.
 */
import { createHash } from "node:crypto";
import { gunzipSync, gzipSync } from "node:zlib";
import type { HistoryItem } from "@durable-agents/core";

const FORMAT = "durable-agents.openai-agents.run-state";
const VERSION = 1;

interface Envelope {
  readonly format: typeof FORMAT;
  readonly v: number;
  /** Leading items of the SDK state's `originalInput` left out (they are `history[0..p)`). */
  readonly p: number;
  /** sha256 of the JSON of the left-out items, to refuse a history that does not match. */
  readonly h: string;
  /** The SDK's serialized state (as JSON), its `originalInput` without the first `p` items. */
  readonly s?: Record<string, unknown>;
  /** Or the same, as JSON text, gzipped, in base64. */
  readonly z?: string;
}

const hashItems = (items: readonly unknown[]) => createHash("sha256").update(JSON.stringify(items)).digest("hex");

export class RunStateMismatchError extends Error {
  override readonly name = "RunStateMismatchError";
}

/** `compact`: leave the history out and gzip the rest; otherwise wrap the SDK's state as it is. */
export function encodeRunState(sdkState: string, history: readonly HistoryItem[], compact: boolean): string {
  const state = JSON.parse(sdkState) as Record<string, unknown>;
  const original = state["originalInput"];
  let p = 0;
  if (compact && Array.isArray(original)) {
    const limit = Math.min(original.length, history.length);
    while (p < limit && JSON.stringify(original[p]) === JSON.stringify(history[p]!.item)) p++;
  }
  const rest = p > 0 ? { ...state, originalInput: (original as unknown[]).slice(p) } : state;
  const envelope: Envelope = {
    format: FORMAT,
    v: VERSION,
    p,
    h: hashItems(history.slice(0, p).map((entry) => entry.item)),
    ...(compact ? { z: gzipSync(JSON.stringify(rest)).toString("base64") } : { s: rest }),
  };
  return JSON.stringify(envelope);
}

export function decodeRunState(runState: string, history: readonly HistoryItem[]): string {
  let envelope: Envelope;
  try {
    envelope = JSON.parse(runState) as Envelope;
  } catch (error) {
    throw new RunStateMismatchError("the saved run state is not JSON", { cause: error });
  }
  if (envelope?.format !== FORMAT || envelope.v !== VERSION || (typeof envelope.s !== "object" && typeof envelope.z !== "string")) {
    throw new RunStateMismatchError("the saved run state was not written by this runner (or by another version of it)");
  }
  let state: Record<string, unknown>;
  try {
    state = envelope.s ?? (JSON.parse(gunzipSync(Buffer.from(envelope.z!, "base64")).toString("utf8")) as Record<string, unknown>);
  } catch (error) {
    throw new RunStateMismatchError("the saved run state is damaged", { cause: error });
  }
  if (envelope.p === 0) return JSON.stringify(state);
  if (history.length < envelope.p) {
    throw new RunStateMismatchError(`the saved run state needs ${envelope.p} history items, the session has ${history.length}`);
  }
  const prefix = history.slice(0, envelope.p).map((entry) => entry.item);
  if (hashItems(prefix) !== envelope.h) {
    throw new RunStateMismatchError("the session's history no longer matches the history the run state was saved with");
  }
  const rest = state["originalInput"];
  return JSON.stringify({ ...state, originalInput: [...prefix, ...(Array.isArray(rest) ? rest : [])] });
}
