/**
 * A tiny in-memory order desk: the "real system" the agent's tools act on. Order 1001 has shipped;
 * order 1002 can still be cancelled. A request the desk refuses (an unknown order, an order that
 * already shipped) throws a `ToolExecutionError`, so the model sees the reason and the call is
 * recorded `failed` without a retry.
 */
import { ToolExecutionError } from "@durable-agents/core";

export type OrderStatus = "processing" | "shipped" | "cancelled";

export interface OrderItem {
  readonly sku: string;
  readonly name: string;
  readonly quantity: number;
}

export interface Order {
  readonly orderId: string;
  readonly customer: string;
  readonly items: readonly OrderItem[];
  status: OrderStatus;
  cancellationReason: string | null;
}

/** One applied cancellation, so a caller can check that a write happened exactly once. */
export interface CancellationRecord {
  readonly orderId: string;
  readonly reason: string;
}

function sampleOrders(): Order[] {
  return [
    {
      orderId: "1001",
      customer: "Ada",
      items: [
        { sku: "KB-87", name: "mechanical keyboard", quantity: 1 },
        { sku: "CB-02", name: "USB-C cable", quantity: 2 },
      ],
      status: "shipped",
      cancellationReason: null,
    },
    {
      orderId: "1002",
      customer: "Grace",
      items: [{ sku: "MN-27", name: "27-inch monitor", quantity: 1 }],
      status: "processing",
      cancellationReason: null,
    },
  ];
}

export class OrderDesk {
  readonly #orders = new Map<string, Order>();
  readonly #cancellations: CancellationRecord[] = [];

  constructor(orders: readonly Order[] = sampleOrders()) {
    for (const order of orders) {
      this.#orders.set(order.orderId, { ...order, items: order.items.map((item) => ({ ...item })) });
    }
  }

  /** A copy of one order, or undefined. */
  order(orderId: string): Order | undefined {
    const order = this.#orders.get(orderId);
    return order ? { ...order, items: order.items.map((item) => ({ ...item })) } : undefined;
  }

  /** Every cancellation the desk applied, in order. */
  cancellations(): readonly CancellationRecord[] {
    return [...this.#cancellations];
  }

  /** A one-line description of the order for the model: items and status. */
  describeOrder(orderId: string): string {
    const order = this.#require(orderId);
    const items = order.items.map((item) => `${item.quantity} x ${item.name} (${item.sku})`).join(", ");
    const status = order.status === "cancelled" ? `cancelled (${order.cancellationReason ?? "no reason given"})` : order.status;
    return `Order ${order.orderId} for ${order.customer}: ${items}. Status: ${status}.`;
  }

  /** Cancels an order that has not shipped. Refuses shipped or already cancelled orders. */
  cancelOrder(orderId: string, reason: string): string {
    const order = this.#require(orderId);
    if (order.status === "shipped") {
      throw new ToolExecutionError(`order ${orderId} has already shipped and can no longer be cancelled`);
    }
    if (order.status === "cancelled") {
      throw new ToolExecutionError(`order ${orderId} was already cancelled`);
    }
    const why = reason.trim() || "no reason given";
    order.status = "cancelled";
    order.cancellationReason = why;
    this.#cancellations.push({ orderId, reason: why });
    return `Order ${orderId} is now cancelled (reason: ${why}).`;
  }

  #require(orderId: string): Order {
    const order = this.#orders.get(orderId.trim());
    if (!order) throw new ToolExecutionError(`there is no order with ID "${orderId}"`);
    return order;
  }
}
