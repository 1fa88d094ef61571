/**
 * Core's session suite on Restate: `restateConformance({ ingressUrl, adminUrl })` gives the suite's
 * `makeStore` and `makeWorker`. Each test gets services of its own (a fresh name prefix) behind one
 * HTTP/2 endpoint registered with the Restate server; its store is a `RestateSessionStore` over the
 * ingress. The endpoint is a small router, as a load balancer in front of several endpoint
 * processes would be:
 * - every handler clients call (the session object's reads, the inbox object, the watch service) is
 *   always served;
 * - the session object's `drive` invocations go to the test's live workers, in turn; with no
 *   worker alive they wait, as requests to a service whose pods are all down do.
 *
 * A worker is an endpoint instance of its own (its own services, history cache and state), in this
 * process, so that the suite's tools still record every execution. `crash()` kills what a dead
 * process would lose: it resets every HTTP/2 stream the worker serves (Restate sees the connection
 * drop and replays those drives elsewhere) and takes no new one; the closures it was running go on
 * in memory, but nothing they produce reaches Restate. `drives` counts the drive attempts that
 * ended on the worker, however they ended.
 */
import http2 from "node:http2";
import * as restate from "@restatedev/restate-sdk";
import type { ConformanceWorker, ConformanceWorkerOptions } from "@durable-agents/core/conformance";
import type { EngineServiceOptions } from "../drive.js";
import { SessionHistories } from "../histories.js";
import { inboxObject } from "../inbox-object.js";
import { type ServiceNames, serviceNames } from "../names.js";
import { restateSessions } from "../restate-sessions.js";
import { RestateSessionStore } from "../restate-store.js";
import { sessionObject } from "../session-object.js";
import { watchService } from "../watch-service.js";
import { killInvocations, registerDeployment } from "./admin.js";
import { freePort } from "./restate-server.js";

export interface RestateConformanceOptions {
  readonly ingressUrl: string;
  readonly adminUrl: string;
  /** Restate settings of the drive handler (registered with the endpoint), e.g. `journalRetention` to read journals. */
  readonly engineOptions?: EngineServiceOptions;
}

type Handler = ReturnType<typeof restate.createEndpointHandler>;
type Exchange = { readonly req: http2.Http2ServerRequest; readonly res: http2.Http2ServerResponse };

/** The SDK's own log lines (every invocation's start, every dropped connection) are kept out of test output. */
export const quietLogger: restate.LoggerTransport = (params, message, ...rest) => {
  if (process.env.DURABLE_AGENTS_RESTATE_LOG) console.error(`[restate ${params.level}]`, message, ...rest);
};

/**
 * Why core's pinning scenarios are not run on Restate: they start workers of two definitions side
 * by side and expect each session to be driven by a worker of its own definition. Restate sends
 * every drive of a service to the service's latest deployment (no load balancer in front of the
 * endpoints can pick by a session's fingerprint), and nothing polls for a waiting session. The
 * drive applies core's pinning rules (a session pinned to another definition waits, or is migrated
 * by a migration from its fingerprint); `test/pinning.test.ts` checks both.
 */
export const restatePinningReason =
  "Restate routes every drive to the latest deployment, not to a worker of the session's definition; the drive's waiting and migrations are tested in engine-restate's pinning.test.ts";

let envCount = 0;

/** One test's services, endpoint and workers. */
export class RestateTestEnv {
  readonly prefix: string;
  readonly names: ServiceNames;
  readonly store: RestateSessionStore;
  private readonly server: http2.Http2Server;
  private readonly front: Handler;
  private readonly workers: TestWorker[] = [];
  private readonly waiting: Exchange[] = [];
  private next = 0;
  private port = 0;
  private closed = false;

  constructor(readonly options: RestateConformanceOptions) {
    envCount += 1;
    this.prefix = `t${process.pid}x${envCount}x${Math.random().toString(36).slice(2, 8)}`;
    this.names = serviceNames(this.prefix);
    this.store = new RestateSessionStore({ url: options.ingressUrl, prefix: this.prefix, longPollMs: 5_000 });
    // The front serves clients: every handler but the drive (which goes to the workers).
    const histories = new SessionHistories(async () => []);
    this.front = restate.createEndpointHandler({
      services: [
        sessionObject({
          names: this.names,
          definitions: new Map(),
          histories,
          resolveAwakeable: async () => {},
          ...(options.engineOptions ? { serviceOptions: options.engineOptions } : {}),
        }),
        inboxObject(this.names),
        watchService(this.names),
      ],
      logger: quietLogger,
    });
    this.server = http2.createServer((req, res) => this.route({ req, res }));
    this.server.on("sessionError", () => {});
  }

  /** Listens on a free port and registers the endpoint with the Restate server. */
  async start(): Promise<this> {
    this.port = await freePort();
    await new Promise<void>((resolve, reject) => {
      this.server.once("error", reject);
      this.server.listen(this.port, "127.0.0.1", () => resolve());
    });
    await registerDeployment(this.options.adminUrl, `http://127.0.0.1:${this.port}`);
    return this;
  }

  worker(options: ConformanceWorkerOptions): TestWorker {
    return new TestWorker(this, options, this.options.engineOptions);
  }

  /** Kills the invocations left running (a turn blocked on a gate nobody opened), then closes the endpoint. */
  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    await this.store.close();
    await killInvocations(this.options.adminUrl, Object.values(this.names)).catch(() => 0);
    for (const worker of this.workers) worker.dropStreams();
    for (const { res } of this.waiting.splice(0)) res.stream.destroy();
    await new Promise<void>((resolve) => this.server.close(() => resolve()));
  }

  attach(worker: TestWorker): void {
    if (!this.workers.includes(worker)) this.workers.push(worker);
    for (const exchange of this.waiting.splice(0)) this.route(exchange);
  }

  private route(exchange: Exchange): void {
    const path = exchange.req.url ?? "";
    exchange.res.stream.on("error", () => {});
    if (path !== `/invoke/${this.names.session}/drive`) {
      this.front(exchange.req, exchange.res);
      return;
    }
    const live = this.workers.filter((w) => w.accepting);
    if (live.length === 0) {
      if (this.closed) exchange.res.stream.destroy();
      else this.waiting.push(exchange);
      return;
    }
    const worker = live[this.next++ % live.length]!;
    worker.serve(exchange);
  }
}

class TestWorker implements ConformanceWorker {
  drives = 0;
  accepting = false;
  private dead = false;
  private readonly handler: Handler;
  private readonly streams = new Set<http2.ServerHttp2Stream>();
  private readonly idle = new Set<() => void>();

  constructor(
    private readonly env: RestateTestEnv,
    options: ConformanceWorkerOptions,
    engineOptions?: EngineServiceOptions,
  ) {
    const sessions = restateSessions({
      sessions: [options.definition],
      ingressUrl: env.options.ingressUrl,
      prefix: env.prefix,
      ...(engineOptions ? { engineOptions } : {}),
    });
    this.handler = restate.createEndpointHandler({ services: [...sessions.services], logger: quietLogger });
  }

  start(): this {
    if (this.dead) return this;
    this.accepting = true;
    this.env.attach(this);
    return this;
  }

  serve({ req, res }: Exchange): void {
    const stream = res.stream;
    this.streams.add(stream);
    stream.once("close", () => {
      this.streams.delete(stream);
      this.drives += 1;
      if (this.streams.size === 0) for (const wake of [...this.idle]) wake();
    });
    this.handler(req, res);
  }

  async stop(options: { timeoutMs?: number } = {}): Promise<void> {
    this.accepting = false;
    if (this.streams.size > 0) {
      await new Promise<void>((resolve) => {
        const timer = setTimeout(done, options.timeoutMs ?? 30_000);
        const self = this;
        function done() {
          clearTimeout(timer);
          self.idle.delete(done);
          resolve();
        }
        this.idle.add(done);
      });
    }
    this.dropStreams();
  }

  crash(): void {
    this.dead = true;
    this.accepting = false;
    this.dropStreams();
  }

  /** Resets every stream this worker serves: Restate retries those invocations on another worker. */
  dropStreams(): void {
    for (const stream of [...this.streams]) stream.destroy();
  }
}

const envs = new WeakMap<object, RestateTestEnv>();

/** `makeStore` and `makeWorker` for core's `sessionConformance`, on the Restate server at these URLs. */
export function restateConformance(options: RestateConformanceOptions) {
  return {
    async makeStore() {
      const env = await new RestateTestEnv(options).start();
      envs.set(env.store, env);
      return { store: env.store, cleanup: () => env.close() };
    },
    makeWorker(worker: ConformanceWorkerOptions): ConformanceWorker {
      const env = envs.get(worker.store);
      if (!env) throw new Error("makeWorker got a store that restateConformance's makeStore did not make");
      return env.worker(worker);
    },
  };
}
