import { readFileSync, writeFileSync } from "node:fs";
import { DatabaseSync } from "node:sqlite";
import { afterEach, describe, expect, it } from "vitest";
import { ConfigurationError, ToolExecutionError } from "@durable-agents/core";
import { tempStoreDir } from "@durable-agents/store-sqlite/testing";
import { OrderDesk, OrderDeskOpenError } from "../src/order-desk.js";

describe("OrderDesk", () => {
  it("describes an order with its items and status", () => {
    const desk = new OrderDesk();
    expect(desk.describeOrder("1001")).toBe(
      "Order 1001 for Ada: 1 x mechanical keyboard (KB-87), 2 x USB-C cable (CB-02). Status: shipped.",
    );
    expect(desk.describeOrder("1002")).toContain("Status: processing.");
  });

  it("cancels an order that has not shipped, once", () => {
    const desk = new OrderDesk();
    expect(desk.cancelOrder("1002", "ordered twice")).toBe("Order 1002 is now cancelled (reason: ordered twice).");
    expect(desk.order("1002")?.status).toBe("cancelled");
    expect(desk.describeOrder("1002")).toContain("Status: cancelled (ordered twice).");
    expect(desk.cancellations()).toEqual([{ orderId: "1002", reason: "ordered twice" }]);

    const again = (() => {
      try {
        desk.cancelOrder("1002", "again");
      } catch (error) {
        return error;
      }
    })();
    expect(ToolExecutionError.isInstance(again)).toBe(true);
    expect(desk.cancellations()).toHaveLength(1);
  });

  it("refuses to cancel a shipped order with an error the model should see, and changes nothing", () => {
    const desk = new OrderDesk();
    let caught: unknown;
    try {
      desk.cancelOrder("1001", "too late");
    } catch (error) {
      caught = error;
    }
    expect(ToolExecutionError.isInstance(caught)).toBe(true);
    expect((caught as Error).message).toBe("order 1001 has already shipped and can no longer be cancelled");
    expect(desk.order("1001")?.status).toBe("shipped");
    expect(desk.cancellations()).toEqual([]);
  });

  it("refuses unknown orders", () => {
    const desk = new OrderDesk();
    expect(() => desk.describeOrder("9999")).toThrow('there is no order with ID "9999"');
    expect(() => desk.cancelOrder("9999", "x")).toThrow(expect.toSatisfy(ToolExecutionError.isInstance));
  });

  it("hands out copies, so callers cannot change an order behind the desk's back", () => {
    const desk = new OrderDesk();
    const copy = desk.order("1002")!;
    copy.status = "cancelled";
    expect(desk.order("1002")?.status).toBe("processing");
  });
});

describe("OrderDesk in a file", () => {
  const temps: ReturnType<typeof tempStoreDir>[] = [];
  afterEach(() => {
    for (const temp of temps.splice(0)) temp.remove();
  });
  const newFile = () => {
    const temp = tempStoreDir("order-desk-");
    temps.push(temp);
    return temp.file("desk.db");
  };

  it("is created with the sample orders, and a second desk on the file sees the first one's cancellation", () => {
    const path = newFile();
    const first = OrderDesk.open(path);
    const second = OrderDesk.open(path);
    try {
      expect(first.path).toBe(path);
      expect(second.order("1002")?.status).toBe("processing");
      expect(first.cancelOrder("1002", "ordered twice")).toBe("Order 1002 is now cancelled (reason: ordered twice).");
      expect(second.order("1002")?.status).toBe("cancelled");
      // The second desk refuses the same cancellation, and logs the refused call too.
      expect(() => second.cancelOrder("1002", "again")).toThrow("order 1002 was already cancelled");
      expect(() => second.cancelOrder("1001", "late")).toThrow("order 1001 has already shipped");
      expect(first.cancelCalls().map((c) => [c.orderId, c.outcome, c.detail])).toEqual([
        ["1002", "cancelled", null],
        ["1002", "refused", "order 1002 was already cancelled"],
        ["1001", "refused", "order 1001 has already shipped and can no longer be cancelled"],
      ]);
      expect(first.cancellations()).toEqual([{ orderId: "1002", reason: "ordered twice" }]);
    } finally {
      first.close();
      second.close();
    }
    // Opened again later (another process, a restart): the state is the file's, not the sample's.
    const later = OrderDesk.open(path);
    try {
      expect(later.describeOrder("1002")).toContain("Status: cancelled (ordered twice).");
      expect(later.cancelCalls()).toHaveLength(3);
    } finally {
      later.close();
    }
  });

  it("refuses a file that is not a desk, and leaves it as it was", () => {
    const notes = newFile();
    writeFileSync(notes, "not a database at all, just some text that is long enough\n".repeat(20));
    const before = readFileSync(notes);
    expect(() => OrderDesk.open(notes)).toThrow(expect.toSatisfy(OrderDeskOpenError.isInstance));
    let caught: unknown;
    try {
      OrderDesk.open(notes);
    } catch (error) {
      caught = error;
    }
    expect(OrderDeskOpenError.isInstance(caught) && ConfigurationError.isInstance(caught)).toBe(true);
    expect(readFileSync(notes).equals(before)).toBe(true);

    const foreign = newFile();
    const db = new DatabaseSync(foreign);
    db.exec("CREATE TABLE t (x)");
    db.close();
    const foreignBefore = readFileSync(foreign);
    expect(() => OrderDesk.open(foreign)).toThrow(
      /is a SQLite database of another program, not an order desk; it was left untouched/,
    );
    expect(readFileSync(foreign).equals(foreignBefore)).toBe(true);
  });
});
