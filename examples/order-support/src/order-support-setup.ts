/**
 * The agent a process runs, for either framework, from the environment: the model (the demo model
 * unless `ORDER_SUPPORT_MODEL` and `OPENAI_API_KEY` name a real one), how long a look-up waits
 * (`ORDER_SUPPORT_LOOKUP_DELAY_MS`, default 0) and how to build the session definition over an
 * order desk.
 */
import type { SessionDefinition } from "@durable-agents/core";
import { aiSdkOrderSupportModelFromEnv } from "./ai-sdk-order-support-model.js";
import { createAiSdkOrderSupportSession } from "./ai-sdk-order-support-session.js";
import type { OrderDesk } from "./order-desk.js";
import type { OrderSupportFramework } from "./order-support-framework.js";
import { orderSupportModelFromEnv } from "./order-support-model.js";
import type { OrderSupportSessionContext } from "./order-support-runtime.js";
import { createOrderSupportSession } from "./order-support-session.js";
import { cancelDelayFromEnv, lookUpDelayFromEnv } from "./slow-look-up.js";

export interface OrderSupportSetup {
  readonly framework: OrderSupportFramework;
  /** The model, for logs, such as "demo model (local, no API key needed)". */
  readonly modelDescription: string;
  readonly isDemo: boolean;
  /** How long each look-up waits before the desk answers, in ms (0: at once). */
  readonly lookUpDelayMs: number;
  /** How long each cancellation waits after the desk applied it, in ms (0: at once). */
  readonly cancelDelayMs: number;
  /** Builds the session definition over a desk (what `startOrderSupportRuntime` takes as `session`). */
  createSession(desk: OrderDesk, context?: OrderSupportSessionContext): SessionDefinition;
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
  const lookUpDelayMs = lookUpDelayFromEnv(env);
  const cancelDelayMs = cancelDelayFromEnv(env);
  const tools = (context: OrderSupportSessionContext | undefined) =>
    context === undefined
      ? { lookUpDelayMs, cancelDelayMs }
      : { lookUpDelayMs, cancelDelayMs, stopping: context.stopping };
  if (framework === "ai-sdk") {
    const choice = aiSdkOrderSupportModelFromEnv(env, demoOptions);
    return {
      framework,
      modelDescription: choice.description,
      isDemo: choice.isDemo,
      lookUpDelayMs,
      cancelDelayMs,
      createSession: (desk, context) =>
        createAiSdkOrderSupportSession(desk, choice.model, tools(context), context?.warehouse),
    };
  }
  const choice = orderSupportModelFromEnv(env, demoOptions);
  return {
    framework,
    modelDescription: choice.description,
    isDemo: choice.isDemo,
    lookUpDelayMs,
    cancelDelayMs,
    createSession: (desk, context) => createOrderSupportSession(desk, choice.model, tools(context), context?.warehouse),
  };
}
