import { describe, expect, it } from "vitest";
import { ConfigurationError } from "@durable-agents/core";
import { OrderSupportDemoModel } from "../src/demo-model.js";
import { orderSupportModelFromEnv } from "../src/order-support-model.js";

describe("orderSupportModelFromEnv", () => {
  it("picks the demo model without ORDER_SUPPORT_MODEL, or with ORDER_SUPPORT_MODEL=demo", () => {
    for (const env of [
      {},
      { ORDER_SUPPORT_MODEL: "demo", OPENAI_API_KEY: "sk-x" },
      { ORDER_SUPPORT_MODEL: " ", OPENAI_API_KEY: "sk-x" },
    ]) {
      const choice = orderSupportModelFromEnv(env);
      expect(choice.isDemo).toBe(true);
      expect(choice.model).toBeInstanceOf(OrderSupportDemoModel);
    }
  });

  it("picks the named OpenAI model when a key is there too", () => {
    expect(orderSupportModelFromEnv({ ORDER_SUPPORT_MODEL: "gpt-5-mini", OPENAI_API_KEY: "sk-x" })).toEqual({
      model: "gpt-5-mini",
      description: 'OpenAI model "gpt-5-mini"',
      isDemo: false,
    });
  });

  it("refuses a model name without a key instead of falling back silently", () => {
    expect(() => orderSupportModelFromEnv({ ORDER_SUPPORT_MODEL: "gpt-5-mini" })).toThrow(
      expect.toSatisfy(ConfigurationError.isInstance),
    );
    expect(() => orderSupportModelFromEnv({ ORDER_SUPPORT_MODEL: "gpt-5-mini", OPENAI_API_KEY: "" })).toThrow(
      /OPENAI_API_KEY is not set/,
    );
  });
});
