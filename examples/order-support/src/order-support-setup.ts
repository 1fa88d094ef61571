/**
 * The agent a process runs, for either framework, from the environment: the model (the demo model
 * unless `ORDER_SUPPORT_MODEL` and `OPENAI_API_KEY` name a real one) and how to build the session
 * definition over an order desk.
 */
import type { SessionDefinition } from "@durable-agents/core";
import { aiSdkOrderSupportModelFromEnv } from "./ai-sdk-order-support-model.js";
import { createAiSdkOrderSupportSession } from "./ai-sdk-order-support-session.js";
import type { OrderDesk } from "./order-desk.js";
import type { OrderSupportFramework } from "./order-support-framework.js";
import { orderSupportModelFromEnv } from "./order-support-model.js";
import { createOrderSupportSession } from "./order-support-session.js";

export interface OrderSupportSetup {
  readonly framework: OrderSupportFramework;
  /** The model, for logs, such as "demo model (local, no API key needed)". */
  readonly modelDescription: string;
  readonly isDemo: boolean;
  /** Builds the session definition over a desk (what `startOrderSupportRuntime` takes as `session`). */
  createSession(desk: OrderDesk): SessionDefinition;
}

export interface OrderSupportDemoSpeed {
  readonly chunkSize?: number;
  readonly chunkDelayMs?: number;
}

export function orderSupportSetupFromEnv(
  framework: OrderSupportFramework,
  env: Readonly<Record<string, string | undefined>> = process.env,
  demoOptions: OrderSupportDemoSpeed = {},
): OrderSupportSetup {
  if (framework === "ai-sdk") {
    const choice = aiSdkOrderSupportModelFromEnv(env, demoOptions);
    return {
      framework,
      modelDescription: choice.description,
      isDemo: choice.isDemo,
      createSession: (desk) => createAiSdkOrderSupportSession(desk, choice.model),
    };
  }
  const choice = orderSupportModelFromEnv(env, demoOptions);
  return {
    framework,
    modelDescription: choice.description,
    isDemo: choice.isDemo,
    createSession: (desk) => createOrderSupportSession(desk, choice.model),
  };
}
