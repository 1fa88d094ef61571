/**
 * Which AI SDK language model the example runs on. With `OPENAI_API_KEY` and `ORDER_SUPPORT_MODEL`
 * (an OpenAI model name), that model through `@ai-sdk/openai`; otherwise the local demo model.
 */
import { createOpenAI } from "@ai-sdk/openai";
import { ConfigurationError } from "@durable-agents/core";
import type { LanguageModel } from "ai";
import { OrderSupportAiSdkDemoModel, type OrderSupportAiSdkDemoModelOptions } from "./ai-sdk-demo-model.js";

export interface AiSdkOrderSupportModelChoice {
  readonly model: LanguageModel;
  /** A short description for logs. */
  readonly description: string;
  readonly isDemo: boolean;
}

/** The same rules as `orderSupportModelFromEnv`: `demo` or unset picks the demo model; a name without a key is an error. */
export function aiSdkOrderSupportModelFromEnv(
  env: Readonly<Record<string, string | undefined>> = process.env,
  demoOptions: OrderSupportAiSdkDemoModelOptions = {},
): AiSdkOrderSupportModelChoice {
  const name = env.ORDER_SUPPORT_MODEL?.trim() ?? "";
  const key = env.OPENAI_API_KEY?.trim() ?? "";
  if (name === "" || name === "demo") {
    return {
      model: new OrderSupportAiSdkDemoModel(demoOptions),
      description: "demo model (local, no API key needed)",
      isDemo: true,
    };
  }
  if (key === "") {
    throw new ConfigurationError(
      `ORDER_SUPPORT_MODEL is "${name}" but OPENAI_API_KEY is not set; set both, or neither for the demo model`,
    );
  }
  return {
    model: createOpenAI({ apiKey: key })(name),
    description: `OpenAI model "${name}" through @ai-sdk/openai`,
    isDemo: false,
  };
}
