/**
 * `restateSessions`: the Restate services that run Durable Agents sessions, for one or more session
 * definitions (any runner: scripted, OpenAI Agents, AI SDK). Bind them to a Restate endpoint and
 * register the endpoint with the Restate cluster; clients talk to the sessions through a
 * `RestateSessionStore` (core's `SessionClient` over Restate's ingress).
 *
 * ```ts
 * const engine = restateSessions({ sessions: [definition], ingressUrl: "http://restate:8080" });
 * http2.createServer(restate.createEndpointHandler({ services: engine.services })).listen(9080);
 * const client = new SessionClient({ store: new RestateSessionStore({ url: "http://restate:8080" }) });
 * ```
 */
import { ConfigurationError, type SessionDefinition } from "@durable-agents/core";
import type { CoalescerOptions } from "@durable-agents/core/engine";
import type { EngineServiceOptions } from "./drive.js";
import { SessionHistories } from "./histories.js";
import { type ServiceNames, serviceNames } from "./names.js";
import { inboxObject } from "./inbox-object.js";
import { RestateSessionStore } from "./restate-store.js";
import { sessionObject } from "./session-object.js";
import { watchService } from "./watch-service.js";

export interface RestateSessionsOptions {
  /** The session definitions this endpoint drives (one per agent name). */
  readonly sessions: readonly SessionDefinition[];
  /**
   * Restate's ingress URL as this endpoint reaches it. A model step reads the history items its
   * process has not seen through it (kept out of the journal), and hands its text deltas to the
   * drive through it (resolving the drive's awakeables).
   */
  readonly ingressUrl: string;
  /** Headers for those ingress requests (e.g. an API token). */
  readonly ingressHeaders?: Readonly<Record<string, string>>;
  /** Prefix of the three service names, to run several engines on one cluster (default none). */
  readonly prefix?: string;
  /** Text delta coalescing, as core's `Worker` has it (64 characters or 100 ms by default). */
  readonly coalescing?: CoalescerOptions;
  /** Transitions after which an idle-between-steps drive hands over to a fresh one (default 200). */
  readonly transitionsPerDrive?: number;
  /** History items this process keeps for model steps, over all sessions (default 50,000). */
  readonly historyCacheItems?: number;
  /** Called each time a drive attempt ends (for tests and metrics). */
  readonly onDriveEnd?: () => void;
  /**
   * Restate's `inactivityTimeout`, `abortTimeout`, `retryPolicy` and `journalRetention` (default 0)
   * for the session object's `drive` handler. A model or tool call that runs longer than the two timeouts together
   * (1 + 10 minutes by default) is aborted by Restate and treated as interrupted: raise them for
   * longer calls.
   */
  readonly engineOptions?: EngineServiceOptions;
}

export interface RestateSessions {
  readonly names: ServiceNames;
  /** The session object, the inbox object and the watch service: bind all three to the endpoint. */
  readonly services: readonly [
    ReturnType<typeof sessionObject>,
    ReturnType<typeof inboxObject>,
    ReturnType<typeof watchService>,
  ];
}

export function restateSessions(options: RestateSessionsOptions): RestateSessions {
  if (!Array.isArray(options?.sessions) || options.sessions.length === 0) {
    throw new ConfigurationError("restateSessions needs at least one session definition", ["sessions"]);
  }
  const definitions = new Map<string, SessionDefinition>();
  for (const definition of options.sessions) {
    if (definitions.has(definition.name)) {
      throw new ConfigurationError(`two session definitions are named "${definition.name}"`, ["sessions"]);
    }
    definitions.set(definition.name, definition);
  }
  const names = serviceNames(options.prefix);
  const store = new RestateSessionStore({
    url: options.ingressUrl,
    ...(options.prefix ? { prefix: options.prefix } : {}),
    ...(options.ingressHeaders ? { headers: options.ingressHeaders } : {}),
  });
  const histories = new SessionHistories((sessionId, offset) => store.readHistory(sessionId, offset), {
    ...(options.historyCacheItems !== undefined ? { maxItems: options.historyCacheItems } : {}),
  });
  const session = sessionObject({
    names,
    definitions,
    histories,
    resolveAwakeable: (id, value) => store.ingress.resolveAwakeable(id, value),
    ...(options.coalescing ? { coalescing: options.coalescing } : {}),
    ...(options.transitionsPerDrive !== undefined ? { transitionsPerDrive: options.transitionsPerDrive } : {}),
    ...(options.onDriveEnd ? { onDriveEnd: options.onDriveEnd } : {}),
    ...(options.engineOptions ? { serviceOptions: options.engineOptions } : {}),
  });
  return { names, services: [session, inboxObject(names), watchService(names)] };
}
