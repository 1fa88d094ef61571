/**
 * A small client of Restate's HTTP ingress: request-response calls and one-way sends to a handler,
 * with an idempotency key so that a retried request is applied once. Connection failures and the
 * ingress's own 5xx answers (a server that is starting or restarting) are retried until
 * `retryForMs` passes (then `WaitTimeoutError`); a 404 (no such handler: the endpoint is not
 * registered) is a `ConfigurationError`, any other refusal a `ContractViolationError`.
 */
import { randomUUID } from "node:crypto";
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

export class IngressClient {
  readonly url: string;
  private readonly headers: Readonly<Record<string, string>>;
  private readonly retryForMs: number;
  private readonly requestTimeoutMs: number;

  constructor(options: IngressOptions) {
    if (typeof options?.url !== "string" || !/^https?:\/\//.test(options.url)) {
      throw new ConfigurationError("the Restate ingress URL is an http(s) URL", ["ingressUrl"]);
    }
    this.url = options.url.replace(/\/+$/, "");
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
        const response = await fetch(`${this.url}/${path}`, {
          method: "POST",
          headers,
          body: payload,
          signal: options.signal ? AbortSignal.any([options.signal, timeout]) : timeout,
        });
        const text = await response.text();
        if (response.ok) return text;
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
