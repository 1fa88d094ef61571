/**
 * The durable session definition of the order support agent: `look_up_order` is a read (retried,
 * no approval); `cancel_order` is a non-idempotent write (runs at most once, after a person
 * approves), and when its outcome is in doubt the desk is asked whether the order is cancelled
 * (`reconcile`). With the warehouse (an MCP server), its tools too, with the effects their
 * annotations imply.
 */
import type { Model } from "@openai/agents";
import type { SessionDefinition, ToolPolicies } from "@durable-agents/core";
import type { McpToolset } from "@durable-agents/mcp";
import { openAIAgentsSession } from "@durable-agents/openai-agents";
import type { OrderDesk } from "./order-desk.js";
import { createOrderSupportAgent } from "./order-support-agent.js";
import { reconcileCancellation } from "./reconcile-cancellation.js";
import type { OrderSupportToolOptions } from "./slow-look-up.js";

export const orderSupportAgentName = "order-support";

/** The tools' effects (what the chat page shows for each call). */
export const orderSupportPolicies: ToolPolicies = {
  look_up_order: { effect: "read" },
  cancel_order: { effect: "non_idempotent_write" },
};

/** The policies the sessions run with: the effects, and `cancel_order`'s check on the desk. */
export function orderSupportSessionPolicies(desk: OrderDesk): ToolPolicies {
  return {
    ...orderSupportPolicies,
    cancel_order: { effect: "non_idempotent_write", reconcile: reconcileCancellation(desk) },
  };
}

export function createOrderSupportSession(
  desk: OrderDesk,
  model: Model | string,
  tools: OrderSupportToolOptions = {},
  warehouse?: McpToolset,
): SessionDefinition {
  return openAIAgentsSession(createOrderSupportAgent(desk, model, tools), {
    name: orderSupportAgentName,
    policies: orderSupportSessionPolicies(desk),
    ...(warehouse ? { mcp: warehouse } : {}),
  });
}
