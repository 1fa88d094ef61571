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
];

export function planSessions(options: PlanOptions): PlannedSession[] {
  const random = seededRandom(options.seed);
  const pick = (n: number) => Math.floor(random() * n);
  const maxTurns = Math.max(1, options.maxTurns ?? 3);
  const prefix = options.prefix ?? `crash-${options.seed}`;
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
      turns.push({
        number: n,
        messageId: `${sessionId}.m${n}`,
        text: lines.join("\n"),
        // Only the blocks before the failure are ever asked for.
        blocks: failAt >= 0 ? blocks.slice(0, failAt) : blocks,
        failsModel: failAt >= 0,
        send: n > 1 && random() < 0.4 ? "queued" : "after",
        resend: random() < 0.15,
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
