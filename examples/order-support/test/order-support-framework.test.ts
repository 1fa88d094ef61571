import { ConfigurationError, defineSession } from "@durable-agents/core";
import { describe, expect, it } from "vitest";
import { OrderSupportAiSdkDemoModel } from "../src/ai-sdk-demo-model.js";
import { aiSdkOrderSupportModelFromEnv } from "../src/ai-sdk-order-support-model.js";
import { OrderDesk } from "../src/order-desk.js";
import { parseOrderSupportFramework } from "../src/order-support-framework.js";
import { startOrderSupportRuntime } from "../src/order-support-runtime.js";
import { orderSupportAgentName } from "../src/order-support-session.js";
import { orderSupportSetupFromEnv } from "../src/order-support-setup.js";

describe("parseOrderSupportFramework", () => {
  it("defaults to openai-agents and accepts both framework names", () => {
    expect(parseOrderSupportFramework(undefined)).toBe("openai-agents");
    expect(parseOrderSupportFramework(" ")).toBe("openai-agents");
    expect(parseOrderSupportFramework("openai-agents")).toBe("openai-agents");
    expect(parseOrderSupportFramework(" ai-sdk ")).toBe("ai-sdk");
  });

  it("refuses any other name with an ConfigurationError that names its source", () => {
    expect(() => parseOrderSupportFramework("AI-SDK", "ORDER_SUPPORT_FRAMEWORK")).toThrow(
      expect.toSatisfy(ConfigurationError.isInstance),
    );
    expect(() => parseOrderSupportFramework("vercel", "ORDER_SUPPORT_FRAMEWORK")).toThrow(
      'ORDER_SUPPORT_FRAMEWORK must be one of openai-agents, ai-sdk, not "vercel"',
    );
  });
});

describe("the AI SDK model from the environment", () => {
  it("is the demo model without ORDER_SUPPORT_MODEL or with ORDER_SUPPORT_MODEL=demo", () => {
    for (const env of [{}, { ORDER_SUPPORT_MODEL: "demo", OPENAI_API_KEY: "sk-x" }]) {
      const choice = aiSdkOrderSupportModelFromEnv(env);
      expect(choice.isDemo).toBe(true);
      expect(choice.model).toBeInstanceOf(OrderSupportAiSdkDemoModel);
    }
  });

  it("is the named OpenAI model through @ai-sdk/openai when a key is there too, and an error without one", () => {
    const choice = aiSdkOrderSupportModelFromEnv({ ORDER_SUPPORT_MODEL: "gpt-5-mini", OPENAI_API_KEY: "sk-x" });
    expect(choice.isDemo).toBe(false);
    expect(choice.model).toMatchObject({ modelId: "gpt-5-mini", provider: expect.stringContaining("openai") });
    expect(() => aiSdkOrderSupportModelFromEnv({ ORDER_SUPPORT_MODEL: "gpt-5-mini" })).toThrow(
      expect.toSatisfy(ConfigurationError.isInstance),
    );
  });
});

describe("orderSupportSetupFromEnv and the runtime", () => {
  it("builds a session named order-support with the same tools for each framework", async () => {
    for (const framework of ["openai-agents", "ai-sdk"] as const) {
      const setup = orderSupportSetupFromEnv(framework, {}, { chunkDelayMs: 0 });
      expect(setup).toMatchObject({
        framework,
        isDemo: true,
        modelDescription: "demo model (local, no API key needed)",
      });
      const runtime = startOrderSupportRuntime({ session: setup.createSession });
      try {
        expect(runtime.definition.name).toBe(orderSupportAgentName);
        const { sessionId } = await runtime.client.startSession({
          agent: orderSupportAgentName,
          message: "look up order 1002",
        });
        const done = await runtime.client.waitUntilIdle(sessionId);
        expect(done.messages.at(-1)?.text).toBe(`I looked up order 1002: ${runtime.desk.describeOrder("1002")}`);
      } finally {
        await runtime.stop();
      }
    }
  });

  it("refuses a session definition with another name, before any worker starts", () => {
    const desk = new OrderDesk();
    const other = orderSupportSetupFromEnv("ai-sdk", {}).createSession(desk);
    expect(() =>
      startOrderSupportRuntime({ desk, session: () => defineSession({ name: "elsewhere", runner: other.runner }) }),
    ).toThrow(expect.toSatisfy(ConfigurationError.isInstance));
  });
});
