/**
 * The order desk's two tools as Vercel AI SDK tools (`tool()` from `ai`, zod input schemas). A
 * request the desk refuses throws core's `ToolExecutionError`, and the AI SDK adapter hands every
 * error thrown by `execute` to the durable engine: the call is recorded `failed`, is not retried,
 * and the model reads the reason.
 */
import { tool, type Tool } from "ai";
import { z } from "zod";
import type { OrderDesk } from "./order-desk.js";
import { cancelOrder, lookUpOrder, type OrderSupportToolOptions } from "./slow-look-up.js";

export type OrderSupportAiSdkTools = {
  readonly look_up_order: Tool<{ order_id: string }, string>;
  readonly cancel_order: Tool<{ order_id: string; reason: string }, string>;
};

/** `options.lookUpDelayMs` makes each look-up wait before the desk answers (see `slow-look-up.ts`). */
export function createOrderSupportAiSdkTools(
  desk: OrderDesk,
  options: OrderSupportToolOptions = {},
): OrderSupportAiSdkTools {
  return {
    look_up_order: tool({
      description: "Look up one order by its order ID and return its items and status.",
      inputSchema: z.object({ order_id: z.string().describe("The order ID, such as 1001") }),
      execute: async ({ order_id }) => lookUpOrder(desk, order_id, options),
    }),
    cancel_order: tool({
      description: "Cancel one order that has not shipped yet.",
      inputSchema: z.object({
        order_id: z.string().describe("The order ID, such as 1002"),
        reason: z.string().describe("Why the customer wants to cancel"),
      }),
      execute: async ({ order_id, reason }) => cancelOrder(desk, order_id, reason, options),
    }),
  };
}
