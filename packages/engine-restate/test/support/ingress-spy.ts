/** Watches the requests a store makes through its ingress client (the tests count them by handler). */
import type { SessionClient } from "@durable-agents/core";
import type { RestateSessionStore } from "../../src/index.js";

/** Calls `onCall` with the handler's name as each `call` (an object's handler) starts; returns the counts by handler. */
export function countCalls(store: RestateSessionStore, onCall?: (handler: string) => void): Map<string, number> {
  const calls = new Map<string, number>();
  const call = store.ingress.call.bind(store.ingress);
  store.ingress.call = ((service: string, key: string, handler: string, ...rest: unknown[]) => {
    calls.set(handler, (calls.get(handler) ?? 0) + 1);
    onCall?.(handler);
    return (call as (...args: unknown[]) => Promise<unknown>)(service, key, handler, ...rest);
  }) as typeof store.ingress.call;
  return calls;
}

/** Calls `onAnswer` as each `callService` (a service's handler: the long polls) answers. */
export function onServiceAnswers(store: RestateSessionStore, onAnswer: () => void): void {
  const callService = store.ingress.callService.bind(store.ingress);
  store.ingress.callService = (async (...args: unknown[]) => {
    const answer = await (callService as (...a: unknown[]) => Promise<unknown>)(...args);
    onAnswer();
    return answer;
  }) as typeof store.ingress.callService;
}

/** Follows a session's events from the start: every event's type, and how many turns completed. */
export function followTurns(client: SessionClient, sessionId: string) {
  const seen: string[] = [];
  let completed = 0;
  const abort = new AbortController();
  const loop = (async () => {
    for await (const event of client.followEvents(sessionId, { after: 0, signal: abort.signal })) {
      seen.push(event.type);
      if (event.type === "turn_completed") completed += 1;
    }
  })().catch(() => {});
  return {
    seen,
    completed: () => completed,
    /** Waits until `count` turns completed (30 s at most). */
    async until(count: number): Promise<void> {
      const deadline = Date.now() + 30_000;
      while (completed < count && Date.now() < deadline) await new Promise((r) => setTimeout(r, 5));
    },
    async stop(): Promise<void> {
      abort.abort();
      await loop;
    },
  };
}
