/**
 * How `cancel_order` finds out whether a cancellation whose outcome is in doubt took effect: it asks
 * the desk for the order's status (core's `reconcile`, run before the call would be left
 * `outcome_unknown`: a process killed during the cancellation, say). A cancelled order is `done`,
 * with the answer the tool gives; an order that is still processing (or shipped) was not cancelled:
 * `not_done`, and core offers the call to a person again. An order the desk does not know could not
 * have been cancelled either. Arguments that are not a cancellation's cannot be checked: `unknown`.
 */
import type { Reconcile } from "@durable-agents/core";
import type { OrderDesk } from "./order-desk.js";

export function reconcileCancellation(desk: OrderDesk): Reconcile {
  return ({ arguments: args }) => {
    const orderId = typeof args === "object" && args !== null ? (args as { order_id?: unknown }).order_id : undefined;
    if (typeof orderId !== "string") return { status: "unknown" };
    const order = desk.order(orderId);
    if (order?.status !== "cancelled") return { status: "not_done" };
    return {
      status: "done",
      output: `Order ${order.orderId} is now cancelled (reason: ${order.cancellationReason ?? "no reason given"}).`,
    };
  };
}
