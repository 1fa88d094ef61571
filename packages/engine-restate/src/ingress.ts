/**
 * A small client of Restate's HTTP ingress: request-response calls and one-way sends to a handler,
 * with an idempotency key so that a retried request is applied once. Connection failures and the
 * ingress's own 5xx answers (a server that is starting or restarting) are retried until
 * `retryForMs` passes (then `WaitTimeoutError`); a 404 (no such handler: the endpoint is not
 * registered) is a `ConfigurationError`, any other refusal a `ContractViolationError`.
 */
import { randomUUID } from "node:crypto";
import http from "node:http";
import https from "node:https";
import { ConfigurationError, ContractViolationError, WaitTimeoutError } from "@durable-agents/core";

export interface IngressOptions {
  /** The ingress URL, e.g. `http://127.0.0.1:8080`. */
  readonly url: string;
  /** Headers sent with every request (e.g. an API token of a managed cluster). */
  readonly headers?: Readonly<Record<string, string>>;
  /** How long connection failures and 5xx answers are retried (ms, default 60,000). */
  readonly retryForMs?: number;
  /**
   * How long one request may wait for its answer (ms, default 120,000): Restate holds a request
   * while the endpoint that must answer it is down. Past it, `WaitTimeoutError` (a write with an
   * idempotency key may still be applied later, once).
   */
  readonly requestTimeoutMs?: number;
}

export interface RequestOptions {
  /** Restate applies a request with a given key once; a retry gets the first answer. */
  readonly idempotencyKey?: string;
  readonly signal?: AbortSignal;
}

const sleep = (ms: number, signal?: AbortSignal) =>
  new Promise<void>((resolve) => {
    const timer = setTimeout(done, ms);
    function done() {
      clearTimeout(timer);
      signal?.removeEventListener("abort", done);
      resolve();
    }
    signal?.addEventListener("abort", done, { once: true });
  });

/** One POST over a keep-alive connection (node:http: far less CPU per request than `fetch`). */
function post(
  transport: Transport,
  url: string,
  headers: Record<string, string>,
  payload: string,
  signal: AbortSignal,
): Promise<{ status: number; text: string }> {
  return new Promise((resolve, reject) => {
    if (signal.aborted) return reject(signal.reason);
    const body = Buffer.from(payload);
    const request = transport.module.request(
      url,
      {
        method: "POST",
        agent: transport.agent,
        headers: { ...headers, "content-length": String(body.length) },
        signal,
      },
      (response) => {
        const chunks: Buffer[] = [];
        response.on("data", (chunk: Buffer) => chunks.push(chunk));
        response.on("end", () =>
          resolve({ status: response.statusCode ?? 0, text: Buffer.concat(chunks).toString("utf8") }),
        );
        response.on("error", reject);
      },
    );
    request.on("error", (error) => reject(signal.aborted ? signal.reason : error));
    request.end(body);
  });
}

interface Transport {
  readonly module: typeof http | typeof https;
  readonly agent: http.Agent;
}

export class IngressClient {
  readonly url: string;
  private readonly transport: Transport;
  private readonly headers: Readonly<Record<string, string>>;
  private readonly retryForMs: number;
  private readonly requestTimeoutMs: number;

  constructor(options: IngressOptions) {
    if (typeof options?.url !== "string" || !/^https?:\/\//.test(options.url)) {
      throw new ConfigurationError("the Restate ingress URL is an http(s) URL", ["ingressUrl"]);
    }
    this.url = options.url.replace(/\/+$/, "");
    const secure = this.url.startsWith("https:");
    this.transport = secure
      ? { module: https, agent: new https.Agent({ keepAlive: true }) }
      : { module: http, agent: new http.Agent({ keepAlive: true }) };
    this.headers = options.headers ?? {};
    this.retryForMs = options.retryForMs ?? 60_000;
    this.requestTimeoutMs = options.requestTimeoutMs ?? 120_000;
  }

  /** Calls a handler of a virtual object and returns its JSON answer. */
  async call<T>(
    service: string,
    key: string,
    handler: string,
    body: unknown,
    options: RequestOptions = {},
  ): Promise<T> {
    const text = await this.request(`${service}/${encodeURIComponent(key)}/${handler}`, body, options);
    return (text === "" ? null : JSON.parse(text)) as T;
  }

  /** Calls a handler of a service (no key). */
  async callService<T>(service: string, handler: string, body: unknown, options: RequestOptions = {}): Promise<T> {
    const text = await this.request(`${service}/${handler}`, body, options);
    return (text === "" ? null : JSON.parse(text)) as T;
  }

  /** Sends a one-way invocation to a handler of a virtual object; resolves once Restate accepted it. */
  async send(
    service: string,
    key: string,
    handler: string,
    body: unknown,
    options: RequestOptions = {},
  ): Promise<void> {
    await this.request(`${service}/${encodeURIComponent(key)}/${handler}/send`, body, {
      idempotencyKey: options.idempotencyKey ?? randomUUID(),
      ...(options.signal ? { signal: options.signal } : {}),
    });
  }

  /** Closes the idle keep-alive connections. */
  close(): void {
    this.transport.agent.destroy();
  }

  /** Resolves an awakeable with a JSON value (Restate's `/restate/awakeables/<id>/resolve`). */
  async resolveAwakeable(awakeableId: string, value: unknown, options: RequestOptions = {}): Promise<void> {
    await this.request(`restate/awakeables/${encodeURIComponent(awakeableId)}/resolve`, value, options);
  }

  private async request(path: string, body: unknown, options: RequestOptions): Promise<string> {
    const deadline = Date.now() + this.retryForMs;
    const headers: Record<string, string> = { ...this.headers, "content-type": "application/json" };
    if (options.idempotencyKey) headers["idempotency-key"] = options.idempotencyKey;
    const payload = JSON.stringify(body ?? null);
    for (let attempt = 1; ; attempt++) {
      let retry: string;
      try {
        const timeout = AbortSignal.timeout(this.requestTimeoutMs);
        const response = await post(
          this.transport,
          `${this.url}/${path}`,
          headers,
          payload,
          options.signal ? AbortSignal.any([options.signal, timeout]) : timeout,
        );
        const text = response.text;
        if (response.status >= 200 && response.status < 300) return text;
        if (response.status < 500) {
          if (response.status === 404) {
            throw new ConfigurationError(
              `Restate has no handler ${path.split("/").slice(0, 1)}/…/${path.split("/").at(-1)}: is the engine's endpoint registered? (${text})`,
            );
          }
          throw new ContractViolationError("store", `Restate refused ${path}: ${response.status} ${text}`);
        }
        retry = `${response.status} ${text}`;
      } catch (error) {
        if (ConfigurationError.isInstance(error) || ContractViolationError.isInstance(error)) throw error;
        if (options.signal?.aborted) throw error;
        if ((error as Error)?.name === "TimeoutError") {
          throw new WaitTimeoutError(`Restate did not answer ${path} within ${this.requestTimeoutMs} ms`);
        }
        retry = error instanceof Error ? error.message : String(error);
      }
      if (Date.now() >= deadline) {
        throw new WaitTimeoutError(`Restate's ingress did not answer ${path} within ${this.retryForMs} ms: ${retry}`);
      }
      await sleep(Math.min(1000, 25 * 2 ** Math.min(attempt, 6)), options.signal);
    }
  }
}
