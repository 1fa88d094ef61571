/**
 * Phases (b) and (c): the workload as durable sessions on a store, driven by core's `Worker`, one
 * session at a time, each followed by a client (`followEvents`) that sees the turn end and the
 * streamed text arrive.
 */
import { SessionClient, Worker, type SessionStore } from "@durable-agents/core";
import { StepClock } from "./step-clock.js";
import { TurnFollower } from "./turn-follower.js";
import { AGENT_NAME, makeDefinition, stepsPerTurn, turnScript, type WorkloadSize } from "./workload.js";
import type { PhaseResult } from "./raw-sdk-phase.js";

export interface DurablePhaseResult extends PhaseResult {
  /** From a text chunk's production in a model step to its arrival at the following client. */
  readonly eventLatencyMs: number[];
}

export interface DurablePhaseOptions {
  readonly store: SessionStore;
  readonly size: WorkloadSize;
  /** Session IDs start with this, so phases sharing a store do not collide. */
  readonly prefix: string;
  /** Called just before the measured sessions start and just after they end. */
  readonly around?: { before?: () => Promise<void>; after?: () => Promise<void> };
}

export async function runDurablePhase(options: DurablePhaseOptions): Promise<DurablePhaseResult> {
  const { store, size, prefix } = options;
  const clock = new StepClock();
  const { definition } = makeDefinition(clock);
  const worker = new Worker({ store, sessions: [definition] }).start();
  const client = new SessionClient({ store, agents: [AGENT_NAME] });
  const steps = stepsPerTurn(size.toolCalls);
  const stepMs: number[] = [];
  const eventLatencyMs: number[] = [];
  let wallStart = performance.now();
  try {
    for (let s = 0; s < size.warmupSessions + size.sessions; s++) {
      const measured = s >= size.warmupSessions;
      if (s === size.warmupSessions) {
        await waitForIdleWorker(worker);
        await options.around?.before?.();
        wallStart = performance.now();
      }
      const sessionId = `${prefix}-s${s}`;
      await client.startSession({ agent: AGENT_NAME, sessionId });
      const follower = new TurnFollower(client, sessionId);
      try {
        for (let t = 1; t <= size.turns; t++) {
          clock.reset();
          const start = performance.now();
          await client.sendMessage(sessionId, turnScript(sessionId, t, size.toolCalls));
          const end = await follower.turnEnd(`turn-${t}`);
          const times = clock.stepTimes(start, end, steps);
          if (measured) {
            stepMs.push(...times);
            eventLatencyMs.push(...follower.textLatencies(`turn-${t}`, clock));
          }
        }
      } finally {
        await follower.stop();
      }
    }
    const wallMs = performance.now() - wallStart;
    await waitForIdleWorker(worker);
    await options.around?.after?.();
    return { stepMs, steps: stepMs.length, wallMs, eventLatencyMs };
  } finally {
    await worker.stop();
  }
}

/** Waits until the worker drives no session (its last lease was handed back). */
export async function waitForIdleWorker(worker: Worker, timeoutMs = 30_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (worker.activeSessions > 0) {
    if (Date.now() > deadline) throw new Error("the worker did not become idle in time");
    await new Promise((resolve) => setTimeout(resolve, 2));
  }
}
