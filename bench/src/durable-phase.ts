/**
 * Phases (b) and (c): the workload as durable sessions on a store, driven by core's `Worker`, one
 * session at a time, each followed by a client (`followEvents`) that sees the turn end and the
 * streamed text arrive.
 */
import { SessionClient, Worker, type SessionStore } from "@durable-agents/core";
import type { RemoteFollower } from "./remote-follower.js";
import { StepClock } from "./step-clock.js";
import { TurnFollower } from "./turn-follower.js";
import { AGENT_NAME, makeDefinition, stepsPerTurn, turnScript, type WorkloadSize } from "./workload.js";
import type { PhaseResult } from "./raw-sdk-phase.js";
import { ownCpuMs } from "./stats.js";

export interface DurablePhaseResult extends PhaseResult {
  /** From a text chunk's production in a model step to its arrival at the following client. */
  readonly eventLatencyMs: number[];
  /** The same, at a client in another process (only with a `remote` follower). */
  readonly remoteEventLatencyMs: number[];
}

/** Runs the workload's sessions one at a time (`session(n)`), so phases can take turns. */
export class DurablePhase {
  private readonly clock = new StepClock();
  private readonly worker: Worker;
  private readonly client: SessionClient;
  readonly stepMs: number[] = [];
  readonly eventLatencyMs: number[] = [];
  readonly remoteEventLatencyMs: number[] = [];
  wallMs = 0;
  cpuMs = 0;

  constructor(
    store: SessionStore,
    private readonly size: WorkloadSize,
    /** Session IDs start with this, so phases sharing a store do not collide. */
    private readonly prefix: string,
    /** A follower in another process on the same store file; every session is followed there too. */
    private readonly remote?: RemoteFollower,
  ) {
    const { definition } = makeDefinition(this.clock);
    this.worker = new Worker({ store, sessions: [definition] }).start();
    this.client = new SessionClient({ store, agents: [AGENT_NAME] });
  }

  async session(index: number, measured: boolean): Promise<void> {
    const steps = stepsPerTurn(this.size.toolCalls);
    const sessionId = `${this.prefix}-s${index}`;
    await waitForIdleWorker(this.worker);
    const started = performance.now();
    const cpuAtStart = ownCpuMs();
    await this.client.startSession({ agent: AGENT_NAME, sessionId });
    const follower = new TurnFollower(this.client, sessionId);
    await this.remote?.follow(sessionId);
    try {
      for (let t = 1; t <= this.size.turns; t++) {
        this.clock.reset();
        const start = performance.now();
        await this.client.sendMessage(sessionId, turnScript(sessionId, t, this.size.toolCalls));
        const end = await follower.turnEnd(`turn-${t}`);
        const times = this.clock.stepTimes(start, end, steps);
        if (measured) {
          this.stepMs.push(...times);
          this.eventLatencyMs.push(...follower.textLatencies(`turn-${t}`, this.clock));
          if (this.remote)
            this.remoteEventLatencyMs.push(...(await this.remote.textLatencies(sessionId, `turn-${t}`, this.clock)));
        }
      }
    } finally {
      await follower.stop();
      this.remote?.unfollow(sessionId);
    }
    // The worker's last commits of the session (its lease handed back) are in the CPU figure.
    await waitForIdleWorker(this.worker);
    if (measured) {
      this.wallMs += performance.now() - started;
      this.cpuMs += ownCpuMs() - cpuAtStart;
    }
  }

  result(): DurablePhaseResult {
    return {
      stepMs: this.stepMs,
      steps: this.stepMs.length,
      wallMs: this.wallMs,
      cpuMs: this.cpuMs,
      eventLatencyMs: this.eventLatencyMs,
      remoteEventLatencyMs: this.remoteEventLatencyMs,
    };
  }

  stop(): Promise<void> {
    return this.worker.stop();
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
