import { Runner, type ModelRequest, type StreamEvent } from "@openai/agents";
import { describe, expect, it } from "vitest";
import { OrderSupportDemoModel, chunkText, decideDemoResponse, parseOrderId } from "../src/demo-model.js";
import { OrderDesk } from "../src/order-desk.js";
import { createOrderSupportAgent } from "../src/order-support-agent.js";

const tools = [
  { type: "function", name: "look_up_order", description: "", parameters: {}, strict: true },
  { type: "function", name: "cancel_order", description: "", parameters: {}, strict: true },
] as ModelRequest["tools"];

function request(input: ModelRequest["input"]): ModelRequest {
  return { input, tools, handoffs: [], modelSettings: {}, outputType: "text", tracing: false };
}

describe("the demo model's decisions", () => {
  it("asks for the right tool with the order number from the latest user message", () => {
    expect(decideDemoResponse(request("look up order 1001"))).toEqual({
      kind: "tool_call",
      name: "look_up_order",
      arguments: { order_id: "1001" },
    });
    expect(
      decideDemoResponse(
        request([
          { role: "user", content: "look up order 1001" },
          {
            role: "user",
            content: [{ type: "input_text", text: "Please cancel order #1002 because I ordered it twice." }],
          },
        ]),
      ),
    ).toEqual({
      kind: "tool_call",
      name: "cancel_order",
      arguments: { order_id: "1002", reason: "I ordered it twice" },
    });
  });

  it("asks the warehouse's MCP tools only when the request offers them", () => {
    const withWarehouse = { type: "function", name: "check_parcel", description: "", parameters: {}, strict: false };
    const release = { type: "function", name: "release_stock", description: "", parameters: {}, strict: false };
    const offered = (input: string) =>
      ({ ...request(input), tools: [...tools, withWarehouse, release] }) as ModelRequest;
    expect(decideDemoResponse(offered("where is the parcel of order 1001?"))).toEqual({
      kind: "tool_call",
      name: "check_parcel",
      arguments: { order_id: "1001" },
    });
    expect(decideDemoResponse(offered("release the stock of order 1002"))).toEqual({
      kind: "tool_call",
      name: "release_stock",
      arguments: { order_id: "1002" },
    });
    expect(decideDemoResponse(offered("cancel order 1002"))).toMatchObject({ name: "cancel_order" });
    expect(decideDemoResponse(offered("where is the parcel?"))).toMatchObject({ kind: "text", text: /Which order/ });
    // Without the warehouse, a question about a parcel is a look-up, as before.
    expect(decideDemoResponse(request("where is the parcel of order 1001?"))).toMatchObject({ name: "look_up_order" });
    expect(decideDemoResponse(request("release the stock of order 1002"))).toMatchObject({ name: "look_up_order" });
  });

  it("answers from the tool results that follow the latest user message", () => {
    const decision = decideDemoResponse(
      request([
        { role: "user", content: "cancel order 1001" },
        {
          type: "function_call",
          callId: "c1",
          name: "cancel_order",
          arguments: '{"order_id":"1001"}',
          status: "completed",
        },
        {
          type: "function_call_result",
          callId: "c1",
          name: "cancel_order",
          status: "completed",
          output: "order 1001 has already shipped",
        },
      ]),
    );
    expect(decision).toEqual({
      kind: "text",
      text: "I asked to cancel order 1001: order 1001 has already shipped",
    });
  });

  it("serves a message steered into the turn: its call next, then one answer from both results", () => {
    const cancelled: ModelRequest["input"] = [
      { role: "user", content: "cancel order 1002" },
      {
        type: "function_call",
        callId: "c1",
        name: "cancel_order",
        arguments: '{"order_id":"1002"}',
        status: "completed",
      },
      {
        type: "function_call_result",
        callId: "c1",
        name: "cancel_order",
        status: "completed",
        output: "Order 1002 is now cancelled.",
      },
    ];
    // Without the steered message, the turn is done.
    expect(decideDemoResponse(request(cancelled))).toEqual({
      kind: "text",
      text: "I asked to cancel order 1002: Order 1002 is now cancelled.",
    });
    // Steered in after the call's outcome: the look-up it asks for comes next.
    const steered: ModelRequest["input"] = [...cancelled, { role: "user", content: "also look up order 1001" }];
    expect(decideDemoResponse(request(steered))).toEqual({
      kind: "tool_call",
      name: "look_up_order",
      arguments: { order_id: "1001" },
    });
    const lookedUp: ModelRequest["input"] = [
      ...steered,
      {
        type: "function_call",
        callId: "c2",
        name: "look_up_order",
        arguments: '{"order_id":"1001"}',
        status: "completed",
      },
      {
        type: "function_call_result",
        callId: "c2",
        name: "look_up_order",
        status: "completed",
        output: "Order 1001: shipped.",
      },
      { role: "user", content: "thanks, and please hurry" },
    ];
    expect(decideDemoResponse(request(lookedUp))).toEqual({
      kind: "text",
      text:
        "I asked to cancel order 1002: Order 1002 is now cancelled.\n" +
        "I looked up order 1001: Order 1001: shipped.\n" +
        'Also noted: "thanks, and please hurry".',
    });
  });

  it("takes a note core left after a cancelled turn for no message of the person", () => {
    const decision = decideDemoResponse(
      request([
        { role: "user", content: "look up order 1001" },
        {
          role: "user",
          content:
            '[previous turn cancelled] The turn for the message "look up order 1001" was cancelled by a person.\nIt made no tool call.',
        },
        { role: "user", content: "look up order 1002" },
        {
          type: "function_call",
          callId: "c1",
          name: "look_up_order",
          arguments: '{"order_id":"1002"}',
          status: "completed",
        },
        {
          type: "function_call_result",
          callId: "c1",
          name: "look_up_order",
          status: "completed",
          output: "Order 1002: processing.",
        },
      ]),
    );
    // Read as a message, the note would ask for order 1001 (and "look up order 1002" would be steered).
    expect(decision).toEqual({ kind: "text", text: "I looked up order 1002: Order 1002: processing." });
  });

  it("asks for an order number, and explains itself for anything else", () => {
    expect(decideDemoResponse(request("where is my order?"))).toMatchObject({
      kind: "text",
      text: expect.stringContaining("order number"),
    });
    expect(decideDemoResponse(request("hello"))).toMatchObject({
      kind: "text",
      text: expect.stringContaining("look up order 1001"),
    });
    // A tool the request does not offer is never asked for.
    expect(decideDemoResponse({ input: "cancel order 1002", tools: [] })).toMatchObject({ kind: "text" });
  });

  it("parses order numbers and chunks text at word boundaries", () => {
    expect(parseOrderId("order no. 1002 please")).toBe("1002");
    expect(parseOrderId("it is 1001")).toBe("1001");
    expect(parseOrderId("no number")).toBeNull();
    const chunks = chunkText("Here is what the order desk has: order 1001 shipped.", 10);
    expect(chunks.join("")).toBe("Here is what the order desk has: order 1001 shipped.");
    expect(chunks.every((chunk) => chunk.length <= 10)).toBe(true);
  });
});

describe("OrderSupportDemoModel", () => {
  it("gives the same response, call IDs included, for the same input", async () => {
    const model = new OrderSupportDemoModel();
    const first = await model.getResponse(request("cancel order 1002"));
    const second = await model.getResponse(request("cancel order 1002"));
    expect(second).toEqual(first);
    expect(first.output[0]).toMatchObject({ type: "function_call", name: "cancel_order" });
    const other = await model.getResponse(
      request([
        { role: "user", content: "look up order 1001" },
        { role: "user", content: "cancel order 1002" },
      ]),
    );
    expect(other.output[0]).not.toEqual(first.output[0]);
  });

  it("streams text in several chunks that add up to the final message", async () => {
    const model = new OrderSupportDemoModel({ chunkSize: 8, chunkDelayMs: 0 });
    const events: StreamEvent[] = [];
    for await (const event of model.getStreamedResponse(request("hello"))) events.push(event);
    const deltas = events.flatMap((event) => (event.type === "output_text_delta" ? [event.delta] : []));
    const done = events.at(-1);
    expect(events[0]).toEqual({ type: "response_started" });
    expect(deltas.length).toBeGreaterThan(3);
    expect(done?.type).toBe("response_done");
    const message = done?.type === "response_done" ? done.response.output[0] : undefined;
    expect(message).toMatchObject({ role: "assistant", content: [{ type: "output_text", text: deltas.join("") }] });
  });

  it("drives a plain Agents SDK run: the tool runs and the answer comes from its result", async () => {
    const desk = new OrderDesk();
    const agent = createOrderSupportAgent(desk, new OrderSupportDemoModel({ chunkDelayMs: 0 }));
    const runner = new Runner({ tracingDisabled: true });

    const lookedUp = await runner.run(agent, "look up order 1001");
    expect(lookedUp.finalOutput).toBe(`I looked up order 1001: ${desk.describeOrder("1001")}`);

    const streamed = await runner.run(agent, "cancel order 1002", { stream: true });
    let text = "";
    for await (const event of streamed) {
      if (event.type === "raw_model_stream_event" && event.data.type === "output_text_delta") text += event.data.delta;
    }
    await streamed.completed;
    expect(streamed.finalOutput).toBe(
      "I asked to cancel order 1002: Order 1002 is now cancelled (reason: requested by the customer).",
    );
    expect(text).toBe(streamed.finalOutput);
    expect(desk.cancellations()).toEqual([{ orderId: "1002", reason: "requested by the customer" }]);
  });
});
