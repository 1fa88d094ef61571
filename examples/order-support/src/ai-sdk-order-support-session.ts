/**
 * The order support session on the Vercel AI SDK: the same name, instructions, tools and policies
 * as the Agents SDK version (`look_up_order` a read, `cancel_order` a non-idempotent write that
 * waits for a person's approval and runs at most once), built with `aiSdkSession`; with the
 * warehouse (an MCP server), its tools too.
 */
import type { SessionDefinition } from "@durable-agents/core";
import type { McpToolset } from "@durable-agents/mcp";
import { aiSdkSession } from "@durable-agents/ai-sdk";
import type { LanguageModel } from "ai";
import { createOrderSupportAiSdkTools } from "./ai-sdk-order-support-tools.js";
import type { OrderDesk } from "./order-desk.js";
import { orderSupportInstructions } from "./order-support-instructions.js";
import { orderSupportAgentName, orderSupportSessionPolicies } from "./order-support-session.js";
import type { OrderSupportToolOptions } from "./slow-look-up.js";

export function createAiSdkOrderSupportSession(
  desk: OrderDesk,
  model: LanguageModel,
  tools: OrderSupportToolOptions = {},
  warehouse?: McpToolset,
): SessionDefinition {
  return aiSdkSession({
    name: orderSupportAgentName,
    model,
    instructions: orderSupportInstructions,
    tools: createOrderSupportAiSdkTools(desk, tools),
    policies: orderSupportSessionPolicies(desk),
    ...(warehouse ? { mcp: warehouse } : {}),
  });
}
