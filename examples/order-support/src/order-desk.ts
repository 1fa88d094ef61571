/**
 * A tiny order desk: the "real system" the agent's tools act on. Order 1001 has shipped; order 1002
 * can still be cancelled. A request the desk refuses (an unknown order, an order that already
 * shipped or was cancelled) throws a `ToolExecutionError`, so the model sees the reason and the call
 * is recorded `failed` without a retry.
 *
 * The desk keeps its orders and a log of every cancel call in SQLite (`node:sqlite`): in memory by
 * default, or in a file of its own (`OrderDesk.open(path)`), so that another process, or the same
 * program after a restart, sees what the first one did. Each cancel call is one transaction that
 * changes the order and appends to the log together, and every call is logged, refused ones too:
 * a cancel that ran twice shows up as two calls, even though the second one was refused.
 */
import { DatabaseSync } from "node:sqlite";
import { ConfigurationError, errorGuard, ToolExecutionError } from "@durable-agents/core";

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

/** One call of `cancelOrder`, applied or refused, in the order they ran. */
export interface CancelCall {
  readonly orderId: string;
  readonly reason: string;
  readonly outcome: "cancelled" | "refused";
  /** The refusal, for a refused call. */
  readonly detail: string | null;
  readonly at: string;
}

/** A desk file that cannot be used: not SQLite, another program's database, or a newer layout. */
export class OrderDeskOpenError extends ConfigurationError {
  constructor(
    readonly path: string,
    message: string,
    options?: ErrorOptions,
  ) {
    super(message, [], options);
  }
  static override isInstance = errorGuard<OrderDeskOpenError>("configuration", "OrderDeskOpenError");
}

/** "OrDk" in ASCII: marks a SQLite file as an order desk. */
const DESK_APPLICATION_ID = 0x4f72446b;
const DESK_VERSION = 1;

const schema = `
CREATE TABLE orders (
  order_id TEXT PRIMARY KEY,
  customer TEXT NOT NULL,
  items TEXT NOT NULL,
  status TEXT NOT NULL,
  cancellation_reason TEXT
) WITHOUT ROWID;
CREATE TABLE cancel_calls (
  id INTEGER PRIMARY KEY,
  order_id TEXT NOT NULL,
  reason TEXT NOT NULL,
  outcome TEXT NOT NULL,
  detail TEXT,
  at TEXT NOT NULL
);`;

export function sampleOrders(): Order[] {
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

interface OrderRow {
  order_id: string;
  customer: string;
  items: string;
  status: string;
  cancellation_reason: string | null;
}

export class OrderDesk {
  /** The desk file, or null for a desk in memory. */
  readonly path: string | null;
  readonly #db: DatabaseSync;

  /**
   * A desk with these orders (default: the sample orders): in memory, gone when the process ends,
   * or with `options.path`, in that file (see `OrderDesk.open`).
   */
  constructor(orders: readonly Order[] = sampleOrders(), options: { readonly path?: string } = {}) {
    const path = options.path ?? null;
    this.path = path;
    if (path === null) {
      this.#db = new DatabaseSync(":memory:");
      setUp(this.#db, ":memory:", orders);
      return;
    }
    try {
      // Waits up to 5 s for another process's write (each holds the lock for one short transaction).
      this.#db = new DatabaseSync(path, { timeout: 5_000 });
    } catch (error) {
      throw new OrderDeskOpenError(path, `the order desk "${path}" cannot be opened: ${messageOf(error)}`, {
        cause: error,
      });
    }
    try {
      setUp(this.#db, path, orders);
    } catch (error) {
      this.#db.close();
      throw error;
    }
  }

  /**
   * The desk in `path`, created with `orders` (default: the sample orders) when the file is new. An
   * existing desk file keeps its own state. Several processes may open the same file. Throws
   * `OrderDeskOpenError` for a file that is not an order desk, leaving it as it was.
   */
  static open(path: string, orders: readonly Order[] = sampleOrders()): OrderDesk {
    return new OrderDesk(orders, { path });
  }

  /** A copy of one order, or undefined. */
  order(orderId: string): Order | undefined {
    const row = this.#db.prepare("SELECT * FROM orders WHERE order_id = ?").get(orderId.trim()) as OrderRow | undefined;
    return row ? toOrder(row) : undefined;
  }

  /** Every cancellation the desk applied, in order. */
  cancellations(): readonly CancellationRecord[] {
    return this.cancelCalls()
      .filter((call) => call.outcome === "cancelled")
      .map((call) => ({ orderId: call.orderId, reason: call.reason }));
  }

  /** Every call of `cancelOrder`, applied or refused, in order. */
  cancelCalls(): readonly CancelCall[] {
    const rows = this.#db
      .prepare("SELECT order_id, reason, outcome, detail, at FROM cancel_calls ORDER BY id")
      .all() as {
      order_id: string;
      reason: string;
      outcome: "cancelled" | "refused";
      detail: string | null;
      at: string;
    }[];
    return rows.map((row) => ({
      orderId: row.order_id,
      reason: row.reason,
      outcome: row.outcome,
      detail: row.detail,
      at: row.at,
    }));
  }

  /** A one-line description of the order for the model: items and status. */
  describeOrder(orderId: string): string {
    const order = this.order(orderId);
    if (!order) throw new ToolExecutionError(`there is no order with ID "${orderId}"`);
    const items = order.items.map((item) => `${item.quantity} x ${item.name} (${item.sku})`).join(", ");
    const status =
      order.status === "cancelled" ? `cancelled (${order.cancellationReason ?? "no reason given"})` : order.status;
    return `Order ${order.orderId} for ${order.customer}: ${items}. Status: ${status}.`;
  }

  /** Cancels an order that has not shipped. Refuses shipped or already cancelled orders. */
  cancelOrder(orderId: string, reason: string): string {
    const id = orderId.trim();
    const why = reason.trim() || "no reason given";
    const refusal = this.#write(() => {
      const row = this.#db.prepare("SELECT * FROM orders WHERE order_id = ?").get(id) as OrderRow | undefined;
      const refused =
        row === undefined
          ? `there is no order with ID "${orderId}"`
          : row.status === "shipped"
            ? `order ${id} has already shipped and can no longer be cancelled`
            : row.status === "cancelled"
              ? `order ${id} was already cancelled`
              : null;
      this.#db
        .prepare("INSERT INTO cancel_calls (order_id, reason, outcome, detail, at) VALUES (?, ?, ?, ?, ?)")
        .run(id, why, refused === null ? "cancelled" : "refused", refused, new Date().toISOString());
      if (refused === null) {
        this.#db
          .prepare("UPDATE orders SET status = 'cancelled', cancellation_reason = ? WHERE order_id = ?")
          .run(why, id);
      }
      return refused;
    });
    if (refusal !== null) throw new ToolExecutionError(refusal);
    return `Order ${id} is now cancelled (reason: ${why}).`;
  }

  /** Closes the desk's database; calls after this fail. */
  close(): void {
    if (this.#db.isOpen) this.#db.close();
  }

  #write<T>(body: () => T): T {
    this.#db.exec("BEGIN IMMEDIATE");
    try {
      const result = body();
      this.#db.exec("COMMIT");
      return result;
    } catch (error) {
      if (this.#db.isTransaction) this.#db.exec("ROLLBACK");
      throw error;
    }
  }
}

/** Checks the file is an order desk (or empty), then creates the tables and orders once. */
function setUp(db: DatabaseSync, path: string, orders: readonly Order[]): void {
  let applicationId: number;
  let version: number;
  let objects: number;
  try {
    applicationId = Number((db.prepare("PRAGMA application_id").get() as { application_id: number }).application_id);
    version = Number((db.prepare("PRAGMA user_version").get() as { user_version: number }).user_version);
    objects = Number((db.prepare("SELECT count(*) AS n FROM sqlite_schema").get() as { n: number }).n);
  } catch (error) {
    throw new OrderDeskOpenError(
      path,
      `"${path}" is not an order desk (not a SQLite database: ${messageOf(error)}); it was left untouched`,
      {
        cause: error,
      },
    );
  }
  if (applicationId !== DESK_APPLICATION_ID && (applicationId !== 0 || objects > 0)) {
    throw new OrderDeskOpenError(
      path,
      `"${path}" is a SQLite database of another program, not an order desk; it was left untouched`,
    );
  }
  if (version > DESK_VERSION) {
    throw new OrderDeskOpenError(
      path,
      `"${path}" is an order desk of a newer version (${version}); it was left untouched`,
    );
  }
  if (path !== ":memory:") {
    db.exec("PRAGMA journal_mode = WAL");
    db.exec("PRAGMA synchronous = FULL");
  }
  if (version === DESK_VERSION) return;
  // Another process may be creating the same desk: the check is repeated inside the write lock.
  db.exec("BEGIN IMMEDIATE");
  try {
    const current = Number((db.prepare("PRAGMA user_version").get() as { user_version: number }).user_version);
    if (current < DESK_VERSION) {
      db.exec(schema);
      const insert = db.prepare(
        "INSERT INTO orders (order_id, customer, items, status, cancellation_reason) VALUES (?, ?, ?, ?, ?)",
      );
      for (const order of orders) {
        insert.run(order.orderId, order.customer, JSON.stringify(order.items), order.status, order.cancellationReason);
      }
      db.exec(`PRAGMA application_id = ${DESK_APPLICATION_ID}`);
      db.exec(`PRAGMA user_version = ${DESK_VERSION}`);
    }
    db.exec("COMMIT");
  } catch (error) {
    if (db.isTransaction) db.exec("ROLLBACK");
    throw error;
  }
}

function toOrder(row: OrderRow): Order {
  return {
    orderId: row.order_id,
    customer: row.customer,
    items: (JSON.parse(row.items) as OrderItem[]).map((item) => ({ ...item })),
    status: row.status as OrderStatus,
    cancellationReason: row.cancellation_reason,
  };
}

function messageOf(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}
