/**
 * Event latency with a paced stream: the model's answer arrives as `chunks` chunks, `paceMs` apart,
 * as a real model's tokens do, instead of all at once. Each turn is one model step that answers
 * with text (no tool calls); a client follows the events, and every chunk's latency is measured
 * from its production to the arrival of the event that carries it.
 */
import { SessionClient, Worker, type SessionStore } from "@durable-agents/core";
import { waitForIdleWorker } from "./durable-phase.js";
import type { RemoteFollower } from "./remote-follower.js";
import { StepClock } from "./step-clock.js";
import { TurnFollower } from "./turn-follower.js";
import { AGENT_NAME, makeDefinition } from "./workload.js";

export interface PacedEventOptions {
  readonly store: SessionStore;
  readonly prefix: string;
  readonly turns: number;
  readonly chunks: number;
  readonly paceMs: number;
  /** A follower in another process on the same store file, following the session too. */
  readonly remote?: RemoteFollower;
}

export interface PacedEventResult {
  /** At the client in this process. */
  readonly local: number[];
  /** At the follower process (empty without `remote`). */
  readonly remote: number[];
}

/** A message whose echoed answer ("You said: ...") is about 160 characters and unique. */
const message = (key: string) =>
  `${key}: ${"please tell me how the order is doing today and when it ships ".repeat(2)}`.trim();

export async function runPacedEvents(options: PacedEventOptions): Promise<PacedEventResult> {
  const clock = new StepClock();
  const { definition } = makeDefinition(clock, { chunks: options.chunks, paceMs: options.paceMs });
  const worker = new Worker({ store: options.store, sessions: [definition] }).start();
  const client = new SessionClient({ store: options.store, agents: [AGENT_NAME] });
  const latencies: number[] = [];
  const remoteLatencies: number[] = [];
  const remote = options.remote;
  const sessionId = `${options.prefix}-paced`;
  try {
    await client.startSession({ agent: AGENT_NAME, sessionId });
    const follower = new TurnFollower(client, sessionId);
    await remote?.follow(sessionId);
    try {
      for (let t = 1; t <= options.turns + 1; t++) {
        await client.sendMessage(sessionId, message(`${sessionId}-t${t}`));
        await follower.turnEnd(`turn-${t}`);
        if (t > 1) latencies.push(...follower.textLatencies(`turn-${t}`, clock)); // turn 1 warms up
        if (remote) {
          const remoteTurn = await remote.textLatencies(sessionId, `turn-${t}`, clock);
          if (t > 1) remoteLatencies.push(...remoteTurn);
        }
        await waitForIdleWorker(worker);
      }
    } finally {
      await follower.stop();
      remote?.unfollow(sessionId);
    }
    return { local: latencies, remote: remoteLatencies };
  } finally {
    await worker.stop();
  }
}
