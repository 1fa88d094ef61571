/**
 * Retry and backoff policies (data, no clock). The machine reads them from its config, so every
 * engine that drives it retries the same way.
 */

export interface RetryPolicy {
  /** Attempts in all, the first included. */
  readonly maxAttempts: number;
  readonly initialDelayMs: number;
  readonly maxDelayMs: number;
  readonly factor: number;
}

/** Backoff between tool attempts (the number of attempts comes from the policy table). */
export type BackoffPolicy = Omit<RetryPolicy, "maxAttempts">;

export const defaultModelRetry: RetryPolicy = { maxAttempts: 3, initialDelayMs: 250, maxDelayMs: 10_000, factor: 2 };
export const defaultToolBackoff: BackoffPolicy = { initialDelayMs: 250, maxDelayMs: 10_000, factor: 2 };

/** The delay before attempt `attempt + 1`, after `attempt` attempts failed. */
export function backoffDelay(policy: BackoffPolicy, attempt: number): number {
  return Math.min(policy.maxDelayMs, policy.initialDelayMs * policy.factor ** Math.max(0, attempt - 1));
}
