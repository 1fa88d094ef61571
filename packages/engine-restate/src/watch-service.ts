/**
 * The watch service: a long poll on one session. `next` answers with the session's cursor
 * (version, last event, last inbox entry) and whether a drive is running. A poller starts from the
 * cursor the session object's `poll` gave it; its inbox seq, which that poll does not know (-1), is
 * read from the inbox object first. Then it asks the inbox object, which answers at once when the
 * session moved past the cursor, says "running" while a drive may be running (the poller then
 * follows the session object's `poll` until the drive ends), or keeps the awakeable of an idle
 * session until it moves: nobody polls an idle session.
 */
import * as restate from "@restatedev/restate-sdk";
import type { ServiceNames } from "./names.js";
import type { NextAnswer, NextRequest, SessionCursor, WatchAnswer, Watcher } from "./protocol.js";

export function watchService(names: ServiceNames) {
  return restate.service({
    name: names.watch,
    description: "Long polls on Durable Agents sessions: answers once a session moves.",
    handlers: {
      next: async (ctx: restate.Context, req: NextRequest): Promise<NextAnswer | null> => {
        const call = <T>(service: string, method: string, parameter: unknown) =>
          ctx.genericCall<unknown, T>({
            service,
            method,
            key: req.sessionId,
            parameter,
            inputSerde: restate.serde.json,
            outputSerde: restate.serde.json,
          });
        // A poller that followed a drive knows the session's version and events, not its inbox.
        let inboxSeq = req.inboxSeq;
        if (inboxSeq < 0) {
          const known = await call<number | null>(names.inbox, "inboxSeq", null);
          if (known === null) return null;
          inboxSeq = known;
        }
        const awakeable = ctx.awakeable<SessionCursor>();
        const watcher: Watcher = {
          awakeableId: awakeable.id,
          version: req.version,
          lastEventSeq: req.lastEventSeq,
          inboxSeq,
        };
        const answer = await call<WatchAnswer | null>(names.inbox, "watchEvents", watcher);
        if (answer === null) return null;
        if (answer.state === "moved") return { ...answer.cursor, running: false };
        // A drive may be running: the poller follows it through the session object's `poll`.
        if (answer.state === "running") {
          return { version: req.version, lastEventSeq: req.lastEventSeq, inboxSeq: answer.inboxSeq, running: true };
        }
        const timeoutMs = Math.max(0, Math.min(60_000, Number(req.timeoutMs) || 0));
        const cursor = await restate.RestatePromise.race([awakeable.promise, ctx.sleep(timeoutMs).map(() => null)]);
        return cursor === null ? null : { ...cursor, running: false };
      },
    },
    options: { journalRetention: 0 },
  });
}
