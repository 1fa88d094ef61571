/**
 * The work of a run, derived from a seed: sessions, their turns (each a script for the scripted
 * model) and what the driver will decide for each approval. Only timing is random in a run; what
 * must hold at its end follows from this plan.
 */
import { crashTools, type CrashToolName } from "./crash-agent.js";

export interface PlannedCall {
  readonly tool: CrashToolName;
  readonly key: string;
  /** For calls that wait for approval: what the driver answers. */
  readonly decision: "approve" | "reject" | null;
}

/**
 * A cancellation the driver sends for a turn (`client.cancelTurn`, always with a request ID). Whether
 * it cancels the turn depends on timing: it may reach the session after the turn ended
 * (`cancel_skipped`), or be refused because no turn runs; the checks read what happened from the
 * database.
 */
export interface PlannedCancel {
  /**
   * `running`: sent `delayMs` after the driver saw the turn start (unless it saw the turn end first).
   * `approval`: sent when the turn's first interrupt appears; the turn's decisions are sent after it
   * (late), and must be refused.
   */
  readonly when: "running" | "approval";
  readonly delayMs: number;
  readonly requestId: string;
  /** The same request sent a second time: at once, or once the driver saw the turn end. */
  readonly duplicate: "none" | "at once" | "after the turn";
}

export interface PlannedTurn {
  /** 1-based. */
  readonly number: number;
  readonly messageId: string;
  readonly text: string;
  /** The responses of the turn: each block is the calls of one model response (run in parallel). */
  readonly blocks: readonly (readonly PlannedCall[])[];
  /** Whether the script makes the model fail (so the turn must end in `turn_failed`). */
  readonly failsModel: boolean;
  /** `queued`: sent right after the previous message; `after`: sent once the previous turn ended. */
  readonly send: "queued" | "after";
  /** The driver sends this message a second time with the same ID (it must be accepted once). */
  readonly resend: boolean;
  /** The driver tries to cancel this turn. */
  readonly cancel: PlannedCancel | null;
}

export interface PlannedSession {
  readonly sessionId: string;
  readonly turns: readonly PlannedTurn[];
  /** When the driver starts it, in ms after the run began. */
  readonly startAtMs: number;
}

export interface PlanOptions {
  readonly sessions: number;
  readonly seed: number;
  /** Sessions are started evenly over this many ms (0: all at once). */
  readonly spreadMs?: number;
  /** Most turns per session (at least 1). Default 3. */
  readonly maxTurns?: number;
  /** Prefix of the session IDs. */
  readonly prefix?: string;
  /** Share of turns the driver tries to cancel. Default 0.2. */
  readonly cancelRate?: number;
}

/** A small, seeded pseudo-random generator (mulberry32), so a seed always gives the same plan. */
export function seededRandom(seed: number): () => number {
  let state = seed >>> 0;
  return () => {
    state = (state + 0x6d2b79f5) >>> 0;
    let t = state;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

const toolMix: readonly CrashToolName[] = [
  "read",
  "read",
  "read",
  "idempotent_write",
  "idempotent_write",
  "idempotent_write",
  "non_idempotent_write",
  "non_idempotent_write",
  "non_idempotent_write_auto",
  "non_idempotent_write_auto",
  "idempotent_write_checked",
  "non_idempotent_write_checked",
];

export function planSessions(options: PlanOptions): PlannedSession[] {
  const random = seededRandom(options.seed);
  const pick = (n: number) => Math.floor(random() * n);
  const maxTurns = Math.max(1, options.maxTurns ?? 3);
  const prefix = options.prefix ?? `crash-${options.seed}`;
  // Cancellations are drawn from a generator of their own, so a seed's scripts stay what they were.
  const cancelRandom = seededRandom(options.seed * 7919 + 17);
  const cancelRate = options.cancelRate ?? 0.2;
  const sessions: PlannedSession[] = [];
  for (let s = 0; s < options.sessions; s++) {
    const sessionId = `${prefix}-${String(s + 1).padStart(4, "0")}`;
    const turnCount = 1 + pick(maxTurns);
    const turns: PlannedTurn[] = [];
    for (let n = 1; n <= turnCount; n++) {
      const blocks: PlannedCall[][] = [];
      const blockCount = 1 + pick(3);
      for (let b = 0; b < blockCount; b++) {
        const block: PlannedCall[] = [];
        const calls = 1 + pick(3);
        for (let c = 0; c < calls; c++) {
          const tool = toolMix[pick(toolMix.length)]!;
          const decision = crashTools[tool].needsApproval ? (random() < 0.25 ? "reject" : "approve") : null;
          block.push({ tool, key: `k${n}.${b + 1}.${c + 1}`, decision });
        }
        blocks.push(block);
      }
      // About one turn in twelve makes the model fail after some of its responses.
      const failAt = random() < 1 / 12 ? pick(blockCount + 1) : -1;
      const lines = [`turn ${n} of ${sessionId}`];
      blocks.forEach((block, index) => {
        if (index === failAt) lines.push("fail model");
        else if (index > 0) lines.push("then");
        for (const call of block) {
          const args = call.decision ? { key: call.key, decision: call.decision } : { key: call.key };
          lines.push(`call ${call.tool} ${JSON.stringify(args)}`);
        }
      });
      if (failAt === blockCount) lines.push("fail model");
      const asked = failAt >= 0 ? blocks.slice(0, failAt) : blocks;
      const turnId = `turn-${n}`;
      turns.push({
        number: n,
        messageId: `${sessionId}.m${n}`,
        text: lines.join("\n"),
        // Only the blocks before the failure are ever asked for.
        blocks: asked,
        failsModel: failAt >= 0,
        send: n > 1 && random() < 0.4 ? "queued" : "after",
        resend: random() < 0.15,
        cancel: planCancel(cancelRandom, cancelRate, `${sessionId}.${turnId}.cancel`, asked),
      });
    }
    const spread = options.spreadMs ?? 0;
    sessions.push({
      sessionId,
      turns,
      startAtMs: options.sessions > 1 ? Math.round((spread * s) / (options.sessions - 1)) : 0,
    });
  }
  return sessions;
}

/**
 * Whether and how the driver tries to cancel a turn. Half of the cancellations of turns that will
 * wait for an approval are sent while they wait; 30 % are sent twice with the same request ID.
 */
function planCancel(
  random: () => number,
  rate: number,
  requestId: string,
  asked: readonly (readonly PlannedCall[])[],
): PlannedCancel | null {
  if (random() >= rate) return null;
  const waitsForApproval = asked.flat().some((call) => crashTools[call.tool].needsApproval);
  const when = waitsForApproval && random() < 0.5 ? "approval" : "running";
  const roll = random();
  return {
    when,
    delayMs: when === "running" ? Math.floor(random() * 100) : 0,
    requestId,
    duplicate: roll < 0.15 ? "at once" : roll < 0.3 ? "after the turn" : "none",
  };
}
