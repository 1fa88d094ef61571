/**
 * The agent frameworks the example runs on: the OpenAI Agents SDK (the default) or the Vercel AI
 * SDK. Chosen with `--framework` in the terminal demo and `ORDER_SUPPORT_FRAMEWORK` for the server.
 */
import { ConfigurationError } from "@durable-agents/core";

export const orderSupportFrameworks = ["openai-agents", "ai-sdk"] as const;

export type OrderSupportFramework = (typeof orderSupportFrameworks)[number];

/** Unset or empty: `openai-agents`. Anything else that is not a framework name is an `ConfigurationError` naming `source`. */
export function parseOrderSupportFramework(value: string | undefined, source = "framework"): OrderSupportFramework {
  const name = value?.trim() ?? "";
  if (name === "") return "openai-agents";
  const known = orderSupportFrameworks.find((framework) => framework === name);
  if (known === undefined) {
    throw new ConfigurationError(`${source} must be one of ${orderSupportFrameworks.join(", ")}, not "${name}"`, [
      source,
    ]);
  }
  return known;
}
