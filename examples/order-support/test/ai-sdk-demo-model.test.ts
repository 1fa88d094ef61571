import { ToolExecutionError } from "@durable-agents/core";
import { generateText, isStepCount, streamText } from "ai";
import { describe, expect, it } from "vitest";
import { OrderSupportAiSdkDemoModel } from "../src/ai-sdk-demo-model.js";
import { createOrderSupportAiSdkTools } from "../src/ai-sdk-order-support-tools.js";
import { OrderDesk } from "../src/order-desk.js";

type CallOptions = Parameters<OrderSupportAiSdkDemoModel["doStream"]>[0];
type StreamPart =
  Awaited<ReturnType<OrderSupportAiSdkDemoModel["doStream"]>>["stream"] extends ReadableStream<infer P> ? P : never;

const offered: CallOptions["tools"] = [
  { type: "function", name: "look_up_order", inputSchema: { type: "object" } },
  { type: "function", name: "cancel_order", inputSchema: { type: "object" } },
];

function call(prompt: CallOptions["prompt"], tools: CallOptions["tools"] = offered): CallOptions {
  return { prompt, tools };
}

const user = (text: string): CallOptions["prompt"][number] => ({ role: "user", content: [{ type: "text", text }] });

async function streamParts(model: OrderSupportAiSdkDemoModel, options: CallOptions): Promise<StreamPart[]> {
  const { stream } = await model.doStream(options);
  const parts: StreamPart[] = [];
  for await (const part of stream) parts.push(part);
  return parts;
}

describe("OrderSupportAiSdkDemoModel", () => {
  it("asks for look_up_order and cancel_order from the latest user message, with IDs derived from the prompt", async () => {
    const model = new OrderSupportAiSdkDemoModel({ chunkDelayMs: 0 });
    const lookUp = await model.doGenerate(call([{ role: "system", content: "be brief" }, user("look up order 1001")]));
    expect(lookUp.finishReason.unified).toBe("tool-calls");
    expect(lookUp.content).toEqual([
      {
        type: "tool-call",
        toolCallId: expect.stringMatching(/^call_demo_[0-9a-f]{16}$/),
        toolName: "look_up_order",
        input: '{"order_id":"1001"}',
      },
    ]);

    const cancel = call([user("look up order 1001"), user("please cancel order #1002 because it is too big")]);
    const first = await model.doGenerate(cancel);
    const again = await model.doGenerate(cancel);
    expect(again).toEqual(first);
    expect(first.content).toEqual([
      {
        type: "tool-call",
        toolCallId: expect.any(String),
        toolName: "cancel_order",
        input: JSON.stringify({ order_id: "1002", reason: "it is too big" }),
      },
    ]);
    expect(first.content[0]).not.toEqual(lookUp.content[0]);
    // A tool the call does not offer is never asked for.
    expect((await model.doGenerate(call([user("cancel order 1002")], []))).content).toMatchObject([{ type: "text" }]);
    expect(model.calls).toBe(4);
  });

  it("answers from the tool results after the latest user message, streamed in several chunks", async () => {
    const model = new OrderSupportAiSdkDemoModel({ chunkSize: 10, chunkDelayMs: 1 });
    const prompt: CallOptions["prompt"] = [
      user("cancel order 1001"),
      {
        role: "assistant",
        content: [
          { type: "tool-call", toolCallId: "c1", toolName: "cancel_order", input: { order_id: "1001", reason: "x" } },
        ],
      },
      {
        role: "tool",
        content: [
          {
            type: "tool-result",
            toolCallId: "c1",
            toolName: "cancel_order",
            output: { type: "error-text", value: "order 1001 has already shipped" },
          },
        ],
      },
    ];
    const parts = await streamParts(model, call(prompt));
    const deltas = parts.flatMap((part) => (part.type === "text-delta" ? [part.delta] : []));
    expect(parts[0]?.type).toBe("stream-start");
    expect(deltas.length).toBeGreaterThan(3);
    expect(deltas.every((delta) => delta.length <= 10)).toBe(true);
    expect(deltas.join("")).toBe("I asked to cancel order 1001: order 1001 has already shipped");
    expect(parts.at(-1)).toMatchObject({ type: "finish", finishReason: { unified: "stop" } });
    expect(parts.some((part) => part.type === "tool-call")).toBe(false);
    // The same prompt streams the same parts.
    expect(await streamParts(model, call(prompt))).toEqual(parts);

    // A rejection (execution-denied) is read as its reason.
    const denied = await model.doGenerate(
      call([
        user("cancel order 1002"),
        {
          role: "assistant",
          content: [
            { type: "tool-call", toolCallId: "c2", toolName: "cancel_order", input: { order_id: "1002", reason: "x" } },
          ],
        },
        {
          role: "tool",
          content: [
            {
              type: "tool-result",
              toolCallId: "c2",
              toolName: "cancel_order",
              output: { type: "execution-denied", reason: "Keep it." },
            },
          ],
        },
      ]),
    );
    expect(denied.content).toEqual([{ type: "text", text: "I asked to cancel order 1002: Keep it." }]);
  });

  it("serves a message steered into the turn, after the call it joined behind or right after the turn's message", async () => {
    const model = new OrderSupportAiSdkDemoModel({ chunkDelayMs: 0 });
    const cancelCall = {
      type: "tool-call",
      toolCallId: "c1",
      toolName: "cancel_order",
      input: { order_id: "1002" },
    } as const;
    const cancelResult = {
      type: "tool-result",
      toolCallId: "c1",
      toolName: "cancel_order",
      output: { type: "text", value: "Order 1002 is now cancelled." },
    } as const;
    // Where the AI SDK runner puts it: after the outcome of the call it joined behind.
    const prompt: CallOptions["prompt"] = [
      user("cancel order 1002"),
      { role: "assistant", content: [cancelCall] },
      { role: "tool", content: [cancelResult] },
      user("also look up order 1001"),
    ];
    expect((await model.doGenerate(call(prompt))).content).toEqual([
      { type: "tool-call", toolCallId: expect.any(String), toolName: "look_up_order", input: '{"order_id":"1001"}' },
    ]);
    // Right after the turn's own message (steered in before the first model step): the same reading.
    const early: CallOptions["prompt"] = [
      user("cancel order 1002"),
      user("also look up order 1001"),
      { role: "assistant", content: [cancelCall] },
      { role: "tool", content: [cancelResult] },
    ];
    expect((await model.doGenerate(call(early))).content).toEqual([
      { type: "tool-call", toolCallId: expect.any(String), toolName: "look_up_order", input: '{"order_id":"1001"}' },
    ]);
    const answered = await model.doGenerate(
      call([
        ...prompt,
        {
          role: "assistant",
          content: [{ type: "tool-call", toolCallId: "c2", toolName: "look_up_order", input: { order_id: "1001" } }],
        },
        {
          role: "tool",
          content: [
            {
              type: "tool-result",
              toolCallId: "c2",
              toolName: "look_up_order",
              output: { type: "text", value: "shipped" },
            },
          ],
        },
      ]),
    );
    expect(answered.content).toEqual([
      {
        type: "text",
        text: "I asked to cancel order 1002: Order 1002 is now cancelled.\nI looked up order 1001: shipped",
      },
    ]);
  });

  it("stops streaming when its call is aborted", async () => {
    const model = new OrderSupportAiSdkDemoModel({ chunkSize: 4, chunkDelayMs: 50 });
    const abort = new AbortController();
    const { stream } = await model.doStream({ ...call([user("hello")]), abortSignal: abort.signal });
    const reader = stream.getReader();
    await reader.read();
    abort.abort();
    await expect(
      (async () => {
        for (;;) if ((await reader.read()).done) return "ended";
      })(),
    ).rejects.toThrow();
  });

  it("drives a plain AI SDK run with the order desk's tools", async () => {
    const desk = new OrderDesk();
    const tools = createOrderSupportAiSdkTools(desk);
    const model = new OrderSupportAiSdkDemoModel({ chunkDelayMs: 0 });

    const lookedUp = await generateText({ model, tools, prompt: "look up order 1001", stopWhen: isStepCount(3) });
    expect(lookedUp.text).toBe(`I looked up order 1001: ${desk.describeOrder("1001")}`);

    const streamed = streamText({ model, tools, prompt: "cancel order 1002", stopWhen: isStepCount(3) });
    let text = "";
    for await (const delta of streamed.textStream) text += delta;
    expect(text).toBe("I asked to cancel order 1002: Order 1002 is now cancelled (reason: requested by the customer).");
    expect(desk.cancellations()).toEqual([{ orderId: "1002", reason: "requested by the customer" }]);
  });
});

describe("the order desk's AI SDK tools", () => {
  it("throw core's ToolExecutionError when the desk refuses, and change nothing", async () => {
    const desk = new OrderDesk();
    const tools = createOrderSupportAiSdkTools(desk);
    const context = { toolCallId: "t1", messages: [], context: {} };
    await expect(tools.cancel_order.execute!({ order_id: "1001", reason: "too late" }, context)).rejects.toThrow(
      ToolExecutionError,
    );
    await expect(tools.look_up_order.execute!({ order_id: "9999" }, context)).rejects.toThrow(
      /no order with ID "9999"/,
    );
    expect(desk.cancellations()).toEqual([]);
    expect(desk.order("1001")?.status).toBe("shipped");
    expect(tools.cancel_order.inputSchema).toBeDefined();
  });
});
