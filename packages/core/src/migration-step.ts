/**
 * A migration of a session from the definition it is pinned to onto another, as every engine runs
 * it: `runMigration` runs the application's transform (if any) on copies of the session and checks
 * what it gave; `migrationTransition` turns that into the definition transition to store, or into
 * the "waiting" mark with why it failed. The transform is the only part that is not pure: an engine
 * that journals steps runs `runMigration` in a step of its own.
 */
import type { DefinitionMigration } from "./definition.js";
import { applyDefinition, checkMigratedHead, type DefinitionTransition } from "./machine/definition.js";
import { copyData } from "./machine/state.js";
import type { HistoryItem, SessionHead } from "./schemas.js";

/** What a migration's transform gave: the session's new state (checked), or why it cannot apply. */
export type MigrationOutcome =
  | { readonly problem: null; readonly head?: SessionHead; readonly appendHistory?: readonly HistoryItem[] }
  | { readonly problem: string; readonly cause?: unknown };

export interface MigrationRun {
  readonly sessionId: string;
  /** The fingerprint the session is pinned to (the migration's `from`), and the one it moves to. */
  readonly from: string;
  readonly to: string;
  /** The session as stored (the transform gets a copy). */
  readonly head: SessionHead;
  /** Its history (the transform gets a copy); needed only by a `transform`. */
  readonly history: () => Promise<readonly HistoryItem[]>;
}

/**
 * Runs the migration's transform, if any, and checks its result against the session. A transform
 * that throws or gives what cannot apply is an outcome with a problem; only a history that cannot
 * be read rejects (nothing was tried: the engine retries as after any failed read).
 */
export async function runMigration(migration: DefinitionMigration, run: MigrationRun): Promise<MigrationOutcome> {
  if (!("transform" in migration)) return { problem: null };
  const history = copyData(await run.history());
  let answer: unknown;
  try {
    answer = await migration.transform({
      sessionId: run.sessionId,
      from: run.from,
      to: run.to,
      head: copyData(run.head),
      history,
    });
  } catch (error) {
    return { problem: `its transform threw: ${error instanceof Error ? error.message : String(error)}`, cause: error };
  }
  if (answer !== undefined && (typeof answer !== "object" || answer === null)) {
    return { problem: "its transform returned neither nothing nor { head?, appendHistory? }" };
  }
  const result = (answer ?? {}) as { head?: SessionHead; appendHistory?: readonly HistoryItem[] };
  const problem = checkMigratedHead(run.head, result.head ?? run.head, result.appendHistory ?? []);
  if (problem !== null) return { problem };
  return {
    problem: null,
    ...(result.head ? { head: result.head } : {}),
    ...(result.appendHistory ? { appendHistory: result.appendHistory } : {}),
  };
}

/**
 * The transition a migration's outcome makes at `now`: `migrated` (store it before anything runs on
 * the new definition), or `failed` with the session's "waiting" mark (`migration_failed`) and why.
 */
export function migrationTransition(
  head: SessionHead,
  migration: DefinitionMigration,
  outcome: MigrationOutcome,
  target: { readonly to: string; readonly description: unknown },
  now: number,
):
  | { readonly migrated: true; readonly transition: DefinitionTransition }
  | { readonly migrated: false; readonly wait: DefinitionTransition; readonly reason: string } {
  const t =
    outcome.problem === null
      ? applyDefinition(
          head,
          {
            type: "migrate",
            from: migration.from,
            to: target.to,
            description: target.description,
            migration: "transform" in migration ? "transform" : "accept",
            ...(outcome.head ? { head: outcome.head } : {}),
            ...(outcome.appendHistory ? { appendHistory: outcome.appendHistory } : {}),
          },
          now,
        )
      : null;
  const problem = outcome.problem ?? t?.ignored ?? null;
  if (problem === null && t !== null) return { migrated: true, transition: t };
  const reason = problem ?? "it did not apply";
  // The session waits, marked once with why; nothing else of it changes.
  return {
    migrated: false,
    wait: applyDefinition(head, { type: "wait", reason: "migration_failed", error: reason }, now),
    reason,
  };
}
