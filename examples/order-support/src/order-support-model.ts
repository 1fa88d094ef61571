/**
 * Which model the example runs on. With `OPENAI_API_KEY` and `ORDER_SUPPORT_MODEL` (an OpenAI model
 * name) in the environment, the real model; otherwise the local demo model, which needs no key.
 */
import type { Model } from "@openai/agents";
import { ConfigurationError } from "@durable-agents/core";
import { OrderSupportDemoModel, type OrderSupportDemoModelOptions } from "./demo-model.js";

export interface OrderSupportModelChoice {
  /** A model name for the SDK's OpenAI provider, or the demo model. */
  readonly model: Model | string;
  /** A short description for logs, such as "demo model (no API key needed)". */
  readonly description: string;
  readonly isDemo: boolean;
}

/** `ORDER_SUPPORT_MODEL=demo` (or unset) picks the demo model; a name without a key is an error. */
export function orderSupportModelFromEnv(
  env: Readonly<Record<string, string | undefined>> = process.env,
  demoOptions: OrderSupportDemoModelOptions = {},
): OrderSupportModelChoice {
  const name = env.ORDER_SUPPORT_MODEL?.trim() ?? "";
  const key = env.OPENAI_API_KEY?.trim() ?? "";
  if (name === "" || name === "demo") {
    return {
      model: new OrderSupportDemoModel(demoOptions),
      description: "demo model (local, no API key needed)",
      isDemo: true,
    };
  }
  if (key === "") {
    throw new ConfigurationError(
      `ORDER_SUPPORT_MODEL is "${name}" but OPENAI_API_KEY is not set; set both, or neither for the demo model`,
    );
  }
  return { model: name, description: `OpenAI model "${name}"`, isDemo: false };
}
