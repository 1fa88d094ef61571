/**
 * A slow order desk, on request. With `lookUpDelayMs` (from `ORDER_SUPPORT_LOOKUP_DELAY_MS` for the
 * demo and the server), every `look_up_order` call waits that long before the desk answers, as a
 * busy back-end would. The wait ends at once when the call's turn is cancelled: the tool reads its
 * abort signal from `currentToolCall()` and throws `ToolCancelledError` (a look-up changed
 * nothing), so the call ends `cancelled` without waiting for the cancellation's grace period.
 *
 * This keeps a turn in flight for as long as a person (pressing Ctrl-C in the demo) or a test
 * (cancelling or steering over HTTP) needs. With 0 (the default) a look-up answers at once.
 *
 * The wait also ends when the process stops (`stopping`, aborted by `OrderSupportRuntime.stop()`):
 * the attempt fails, changing nothing, and the next worker runs the look-up again. The worker's stop
 * waits for the steps in flight, so a look-up that went on waiting would hold the process up.
 */
import { setTimeout as sleep } from "node:timers/promises";
import { ConfigurationError, currentToolCall, ToolCancelledError } from "@durable-agents/core";
import type { OrderDesk } from "./order-desk.js";

export interface OrderSupportToolOptions {
  /** How long a look-up waits before the desk answers, in ms. Default 0. */
  readonly lookUpDelayMs?: number;
  /**
   * How long a cancellation waits after the desk applied it, before it returns, in ms (a slow
   * confirmation). Default 0. A process killed in this wait leaves the call in doubt: the next worker
   * asks the desk (the policy's `reconcile`) and finds the order cancelled.
   */
  readonly cancelDelayMs?: number;
  /** Aborted when the process stops: a look-up still waiting stops too. */
  readonly stopping?: AbortSignal;
}

/** The longest wait a Node timer can hold (about 24.8 days); a longer one would fire at once. */
const maxDelayMs = 2_147_483_647;

/** What `look_up_order` answers: the desk's description of the order, after the configured wait. */
export async function lookUpOrder(desk: OrderDesk, orderId: string, options: OrderSupportToolOptions): Promise<string> {
  const delayMs = options.lookUpDelayMs ?? 0;
  const signal = currentToolCall()?.signal;
  const signals = [signal, options.stopping].filter((s): s is AbortSignal => s !== undefined);
  const check = () => {
    const aborted = signals.find((s) => s.aborted);
    if (aborted) throw stopped(orderId, aborted);
  };
  check();
  if (delayMs > 0) {
    try {
      await sleep(delayMs, undefined, signals.length > 0 ? { signal: AbortSignal.any(signals) } : {});
    } catch (error) {
      check();
      throw error;
    }
  }
  check();
  return desk.describeOrder(orderId);
}

/**
 * What `cancel_order` answers: the desk cancels the order, then (with `cancelDelayMs`) the answer
 * waits, as a slow confirmation would. The wait ignores the turn's cancellation (the order is
 * cancelled already); it ends when the process stops, with an error: the call is then in doubt, and
 * the next worker's check finds it done.
 */
export async function cancelOrder(
  desk: OrderDesk,
  orderId: string,
  reason: string,
  options: OrderSupportToolOptions,
): Promise<string> {
  const answer = desk.cancelOrder(orderId, reason);
  const delayMs = options.cancelDelayMs ?? 0;
  if (delayMs > 0) {
    await sleep(delayMs, undefined, options.stopping ? { signal: options.stopping } : {}).catch(() => {
      throw new Error(`the process stopped before the cancellation of order ${orderId} was confirmed`);
    });
  }
  return answer;
}

function stopped(orderId: string, signal: AbortSignal): ToolCancelledError {
  const reason: unknown = signal.reason;
  const why = reason instanceof Error ? reason.message : String(reason ?? "aborted");
  return new ToolCancelledError(`the look-up of order ${orderId} stopped before the desk answered (${why})`, {
    cause: reason,
  });
}

/** `ORDER_SUPPORT_LOOKUP_DELAY_MS`: unset or empty is 0; anything but a whole number of ms is refused. */
export function lookUpDelayFromEnv(env: Readonly<Record<string, string | undefined>> = process.env): number {
  return delayFromEnv(env, "ORDER_SUPPORT_LOOKUP_DELAY_MS");
}

/** `ORDER_SUPPORT_CANCEL_DELAY_MS`: unset or empty is 0; anything but a whole number of ms is refused. */
export function cancelDelayFromEnv(env: Readonly<Record<string, string | undefined>> = process.env): number {
  return delayFromEnv(env, "ORDER_SUPPORT_CANCEL_DELAY_MS");
}

function delayFromEnv(env: Readonly<Record<string, string | undefined>>, name: string): number {
  const raw = env[name]?.trim() ?? "";
  if (raw === "") return 0;
  const value = /^\d{1,10}$/.test(raw) ? Number(raw) : Number.NaN;
  if (!(value <= maxDelayMs)) {
    throw new ConfigurationError(
      `${name} must be a whole number of milliseconds from 0 to ${maxDelayMs}, not "${raw}"`,
    );
  }
  return value;
}
