/**
 * What one step of the peer rows returns: the payload sizes of a session's step results, and text
 * of those sizes that no compressor shrinks.
 */
import { createHash } from "node:crypto";

/**
 * The bytes of the five step results (model, tool, model, tool, model) of the turn the Restate row
 * and the peers row run on a session (`call look_up {...}`, `then`, `call look_up {...}`), as
 * engine-restate journals them: the bare `ctx.run` handler of restate-phase.ts measures them on
 * every run and returns the same sizes; these are its figures (they move by a few bytes with the
 * turn's key). The peers' steps return outputs of these sizes, in this order, over and over.
 */
export const STEP_PAYLOAD_BYTES: readonly number[] = [519, 249, 824, 249, 2018];

/** The size of the `index`-th step's output (0-based): the five sizes in turn. */
export const stepPayloadBytes = (index: number): number => STEP_PAYLOAD_BYTES[index % STEP_PAYLOAD_BYTES.length]!;

/**
 * `bytes` characters of hex, different for every `seed`: PostgreSQL's pglz (TOAST) finds nothing to
 * compress in it, as in a real model's answer, and unlike `"x".repeat(n)`, which compresses to a
 * few bytes and would hide what a store writes.
 */
export function payloadText(bytes: number, seed: string): string {
  let text = "";
  for (let block = 0; text.length < bytes; block++)
    text += createHash("sha256").update(`${seed}/${block}`).digest("hex");
  return text.slice(0, bytes);
}
