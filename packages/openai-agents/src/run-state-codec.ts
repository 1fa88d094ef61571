/**
 * The run state this runner hands the engine: the SDK's serialized `RunState` without the part of
 * its `originalInput` that is the session's stored history. The SDK writes the turn's whole input
 * into its state; the engine already stores that history, so the state keeps only how many items
 * were left out and a hash of them, and `decode` puts them back from the history it is given.
 */
import { createHash } from "node:crypto";
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
  readonly s: Record<string, unknown>;
}

const hashItems = (items: readonly unknown[]) => createHash("sha256").update(JSON.stringify(items)).digest("hex");

export class RunStateMismatchError extends Error {
  override readonly name = "RunStateMismatchError";
}

export function encodeRunState(sdkState: string, history: readonly HistoryItem[], strip: boolean): string {
  const state = JSON.parse(sdkState) as Record<string, unknown>;
  const original = state["originalInput"];
  let p = 0;
  if (strip && Array.isArray(original)) {
    const limit = Math.min(original.length, history.length);
    while (p < limit && JSON.stringify(original[p]) === JSON.stringify(history[p]!.item)) p++;
  }
  const envelope: Envelope = {
    format: FORMAT,
    v: VERSION,
    p,
    h: hashItems(history.slice(0, p).map((entry) => entry.item)),
    s: p > 0 ? { ...state, originalInput: (original as unknown[]).slice(p) } : state,
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
  if (envelope?.format !== FORMAT || envelope.v !== VERSION || typeof envelope.s !== "object") {
    throw new RunStateMismatchError("the saved run state was not written by this runner (or by another version of it)");
  }
  if (envelope.p === 0) return JSON.stringify(envelope.s);
  if (history.length < envelope.p) {
    throw new RunStateMismatchError(`the saved run state needs ${envelope.p} history items, the session has ${history.length}`);
  }
  const prefix = history.slice(0, envelope.p).map((entry) => entry.item);
  if (hashItems(prefix) !== envelope.h) {
    throw new RunStateMismatchError("the session's history no longer matches the history the run state was saved with");
  }
  const rest = envelope.s["originalInput"];
  return JSON.stringify({ ...envelope.s, originalInput: [...prefix, ...(Array.isArray(rest) ? rest : [])] });
}
