import { describe, expect, it } from "vitest";
import { ToolExecutionError } from "@durable-agents/core";
import { OrderDesk } from "../src/order-desk.js";

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
    expect(() => desk.cancelOrder("9999", "x")).toThrow(ToolExecutionError);
  });

  it("hands out copies, so callers cannot change an order behind the desk's back", () => {
    const desk = new OrderDesk();
    const copy = desk.order("1002")!;
    copy.status = "cancelled";
    expect(desk.order("1002")?.status).toBe("processing");
  });
});
