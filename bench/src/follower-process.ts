/**
 * A follower PROCESS (started with `fork`): a client in another process than the worker, following
 * sessions' events through its own `SqliteStore` on the same file, as a UI server would. Wake-ups
 * reach it only through the store's cross-process watch (`PRAGMA data_version`, every
 * `watchIntervalMs`). It stamps every text event's arrival with the machine's monotonic clock
 * (`process.hrtime`, the same in every process) and reports each turn's arrivals when the turn ends.
 *
 * argv: <store file> <watchIntervalMs>
 */
import { SessionClient } from "@durable-agents/core";
import { SqliteStore } from "@durable-agents/store-sqlite";
import { monotonicMs } from "./step-clock.js";
import { AGENT_NAME } from "./workload.js";

export type FollowerRequest =
  | { readonly type: "follow"; readonly sessionId: string }
  | { readonly type: "unfollow"; readonly sessionId: string }
  | { readonly type: "stop" };
export type FollowerReport =
  | { readonly type: "ready" }
  /** The first event of the session arrived: the follower is following. */
  | { readonly type: "following"; readonly sessionId: string }
  | {
      readonly type: "turn";
      readonly sessionId: string;
      readonly turnId: string;
      readonly text: string;
      /** Cumulative text length after each text event, with its arrival (monotonic ms). */
      readonly arrivals: { end: number; at: number }[];
    }
  | { readonly type: "error"; readonly message: string };

async function main(): Promise<void> {
  const [path, intervalText] = process.argv.slice(2);
  if (!path || !intervalText || !process.send)
    throw new Error("usage: follower-process <file> <watchIntervalMs> (forked)");
  const send = (report: FollowerReport) => process.send!(report);
  const store = new SqliteStore({ path, watchIntervalMs: Number(intervalText) });
  const client = new SessionClient({ store, agents: [AGENT_NAME] });
  const follows = new Map<string, { controller: AbortController; loop: Promise<void> }>();

  const follow = async (sessionId: string, signal: AbortSignal) => {
    const texts = new Map<string, { text: string; arrivals: { end: number; at: number }[] }>();
    let first = true;
    for await (const event of client.followEvents(sessionId, { signal })) {
      const at = monotonicMs();
      if (first) {
        first = false;
        send({ type: "following", sessionId });
      }
      if (event.type === "text_delta") {
        const entry = texts.get(event.data.turnId) ?? { text: "", arrivals: [] };
        entry.text += event.data.text;
        entry.arrivals.push({ end: entry.text.length, at });
        texts.set(event.data.turnId, entry);
      } else if (event.type === "turn_completed" || event.type === "turn_failed") {
        const entry = texts.get(event.data.turnId) ?? { text: "", arrivals: [] };
        texts.delete(event.data.turnId);
        send({ type: "turn", sessionId, turnId: event.data.turnId, text: entry.text, arrivals: entry.arrivals });
      }
    }
  };

  process.on("message", (request: FollowerRequest) => {
    if (request.type === "follow") {
      const controller = new AbortController();
      const loop = follow(request.sessionId, controller.signal).catch((error: unknown) => {
        if (!controller.signal.aborted) send({ type: "error", message: String(error) });
      });
      follows.set(request.sessionId, { controller, loop });
    } else if (request.type === "unfollow") {
      const entry = follows.get(request.sessionId);
      follows.delete(request.sessionId);
      entry?.controller.abort();
    } else if (request.type === "stop") {
      void (async () => {
        for (const entry of follows.values()) entry.controller.abort();
        await Promise.all([...follows.values()].map((entry) => entry.loop));
        await store.close();
        process.disconnect();
      })();
    }
  });
  send({ type: "ready" });
}

main().catch((error: unknown) => {
  console.error(error);
  process.exit(1);
});
