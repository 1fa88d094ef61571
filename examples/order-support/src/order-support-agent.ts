/**
 * The order support agent: a plain Agents SDK agent with two function tools over an `OrderDesk`.
 * The tools are built with the adapter's `durableTool()`, which is the SDK's `tool()` with
 * `errorFunction: null`: a thrown error (a `ToolExecutionError` from the desk, or anything else)
 * reaches the durable engine instead of being turned into a fixed text by the SDK.
 */
import { Agent, type Model } from "@openai/agents";
import { durableTool } from "@durable-agents/openai-agents";
import { z } from "zod";
import type { OrderDesk } from "./order-desk.js";
import { orderSupportInstructions } from "./order-support-instructions.js";
import {
  cancelOrder as cancelOnDesk,
  lookUpOrder as lookUpOnDesk,
  type OrderSupportToolOptions,
} from "./slow-look-up.js";

export { orderSupportInstructions };

/** `options.lookUpDelayMs` makes each look-up wait before the desk answers (see `slow-look-up.ts`). */
export function createOrderSupportAgent(
  desk: OrderDesk,
  model: Model | string,
  options: OrderSupportToolOptions = {},
): Agent {
  const lookUpOrder = durableTool({
    name: "look_up_order",
    description: "Look up one order by its order ID and return its items and status.",
    parameters: z.object({ order_id: z.string().describe("The order ID, such as 1001") }),
    execute: ({ order_id }) => lookUpOnDesk(desk, order_id, options),
  });
  const cancelOrder = durableTool({
    name: "cancel_order",
    description: "Cancel one order that has not shipped yet.",
    parameters: z.object({
      order_id: z.string().describe("The order ID, such as 1002"),
      reason: z.string().describe("Why the customer wants to cancel"),
    }),
    execute: ({ order_id, reason }) => cancelOnDesk(desk, order_id, reason, options),
  });
  return new Agent({
    name: "OrderSupport",
    instructions: orderSupportInstructions,
    model,
    tools: [lookUpOrder, cancelOrder],
  });
}
