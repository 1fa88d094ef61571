/**
 * An order desk with faults, for the reconciliation tests: the real desk (its SQLite tables, its log
 * of cancel calls) behind a proxy that can lose a cancellation's answer after the desk applied it,
 * fail a cancellation before the desk applied it, or refuse to be read (so a check cannot tell).
 */
import type { OrderDesk } from "../../src/order-desk.js";

export interface DeskFaults {
  /** The desk applies a cancellation, then its answer is lost (the tool throws). */
  loseCancelAnswer?: boolean;
  /** The first cancellation fails before the desk applies it (the tool throws). */
  failFirstCancel?: boolean;
  /** `order()` throws: the desk cannot be read (a check of a cancellation fails). */
  readsDown?: boolean;
}

export function faultyDesk(desk: OrderDesk, faults: DeskFaults): OrderDesk & { cancelAttempts: number } {
  const state = { cancelAttempts: 0 };
  return new Proxy(desk, {
    get(target, property) {
      if (property === "cancelAttempts") return state.cancelAttempts;
      if (property === "cancelOrder") {
        return (orderId: string, reason: string) => {
          state.cancelAttempts += 1;
          if (faults.failFirstCancel && state.cancelAttempts === 1)
            throw new Error("the desk dropped the connection before the cancellation");
          const answer = target.cancelOrder(orderId, reason);
          if (faults.loseCancelAnswer) throw new Error("the desk's answer was lost");
          return answer;
        };
      }
      if (property === "order" && faults.readsDown) {
        return () => {
          throw new Error("the desk cannot be read right now");
        };
      }
      const value: unknown = Reflect.get(target, property, target);
      return typeof value === "function" ? value.bind(target) : value;
    },
  }) as OrderDesk & { cancelAttempts: number };
}
