/**
 * Cancelling and steering a turn through core's real Worker, SessionClient and the in-memory store:
 * the cancellation's abort reaches the model call and the tools through the SDK's own signals, and
 * steered messages reach the model where they joined the turn.
 */
import { afterEach, describe, expect, it } from "vitest";
import { z } from "zod";
import {
  Agent,
  type AgentInputItem,
  type CallModelInputFilter,
  type ModelRequest,
  type StreamEvent,
} from "@openai/agents";
import {
  SessionClient,
  ToolCancelledError,
  Worker,
  currentToolCall,
  type HistoryItem,
  type SessionSnapshot,
} from "@durable-agents/core";
import type { RecordedOutcome } from "@durable-agents/core/engine";
import { scriptedHangs } from "@durable-agents/core/testing";
import { memoryRawReader, MemoryStore } from "@durable-agents/store-memory";
import { durableTool, OpenAIAgentsRunner, openAIAgentsSession, type OpenAIAgentsRunnerOptions } from "../src/index.js";
import { ScriptedModel } from "../src/testing/index.js";

const workers: Worker[] = [];
afterEach(async () => {
  await Promise.all(workers.splice(0).map((worker) => worker.stop({ timeoutMs: 2_000 })));
});

type Item = Record<string, unknown>;

const textOf = (item: Item): string =>
  typeof item["content"] === "string"
    ? (item["content"] as string)
    : Array.isArray(item["content"])
      ? (item["content"] as Item[]).map((part) => String(part["text"] ?? "")).join("")
      : "";

/** A model input as short lines: user texts, the calls and results by tool name, assistant answers. */
const promptOf = (input: string | readonly AgentInputItem[]): string[] =>
  (typeof input === "string" ? [{ type: "message", role: "user", content: input }] : (input as unknown as Item[])).map(
    (item) => {
      if (item["role"] === "user") return `user: ${textOf(item)}`;
      if (item["type"] === "function_call") return `call: ${String(item["name"])}`;
      if (item["type"] === "function_call_result") return `result: ${String(item["name"])}`;
      if (item["role"] === "assistant") return "assistant";
      return String(item["type"]);
    },
  );

/** The scripted model, keeping each call's input and signal. */
class RecordingModel extends ScriptedModel {
  readonly inputs: string[][] = [];
  readonly signals: (AbortSignal | undefined)[] = [];

  override async *getStreamedResponse(request: ModelRequest): AsyncIterable<StreamEvent> {
    this.inputs.push(promptOf(request.input));
    this.signals.push(request.signal);
    yield* super.getStreamedResponse(request);
  }
}

/** Overloaded while its input holds a single user message: a first step fails until a steered message joins. */
class OverloadedModel extends RecordingModel {
  refused = 0;

  override async *getStreamedResponse(request: ModelRequest): AsyncIterable<StreamEvent> {
    if (promptOf(request.input).filter((line) => line.startsWith("user: ")).length < 2) {
      this.refused++;
      throw new Error("overloaded, try again");
    }
    yield* super.getStreamedResponse(request);
  }
}

/** Waits for a condition the test cannot subscribe to (it fails the test when it never holds). */
async function until(what: string, check: () => boolean, timeoutMs = 10_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!check()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting until ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 5));
  }
}

/** Rejects with the signal's reason once it aborts (what a tool that honours its signal does). */
const abortedBy = (signal: AbortSignal): Promise<never> =>
  new Promise<never>((_, reject) => {
    const stop = () => reject(signal.reason instanceof Error ? signal.reason : new Error("aborted"));
    if (signal.aborted) stop();
    else signal.addEventListener("abort", stop, { once: true });
  });

interface Seen {
  /** `details.signal` of the tool's execute, and `currentToolCall().signal` inside it. */
  framework: AbortSignal | undefined;
  context: AbortSignal | undefined;
}

function controlAgent() {
  const started: string[] = [];
  const seen = new Map<string, Seen>();
  const gates = new Map<string, { opened: Promise<void>; open: () => void }>();
  const gateOf = (n: string) => {
    let gate = gates.get(n);
    if (!gate) {
      let open!: () => void;
      const opened = new Promise<void>((resolve) => {
        open = resolve;
      });
      gate = { opened, open };
      gates.set(n, gate);
    }
    return gate;
  };
  const note = (name: string, framework: AbortSignal | undefined) => {
    started.push(name);
    seen.set(name, { framework, context: currentToolCall()?.signal });
  };
  const agent = new Agent({
    name: "control",
    instructions: "Follow the script.",
    tools: [
      // Stops on the SDK's own tool signal, with the signal's reason (an AbortError).
      durableTool({
        name: "slow_read",
        description: "Reads slowly.",
        parameters: z.object({ id: z.string() }),
        effect: "read",
        execute: async ({ id }, _context, details) => {
          note("slow_read", details?.signal);
          await abortedBy(details!.signal!);
          return `read ${id}`;
        },
      }),
      // Stops on core's context signal and says it changed nothing.
      durableTool({
        name: "careful_write",
        description: "Writes carefully.",
        parameters: z.object({}),
        execute: async (_args, _context, details) => {
          note("careful_write", details?.signal);
          await abortedBy(currentToolCall()!.signal!).catch((error: unknown) => {
            throw new ToolCancelledError("stopped before writing anything", { cause: error });
          });
          return "written";
        },
      }),
      // Stops on the signal too, but with a plain error: it cannot say what it changed.
      durableTool({
        name: "blunt_write",
        description: "Writes bluntly.",
        parameters: z.object({}),
        execute: async (_args, _context, details) => {
          note("blunt_write", details?.signal);
          await abortedBy(details!.signal!);
          return "written";
        },
      }),
      // Waits for the test to open its gate.
      durableTool({
        name: "step",
        description: "A step of the work.",
        parameters: z.object({ n: z.string() }),
        effect: "read",
        execute: async ({ n }) => {
          started.push(`step ${n}`);
          await gateOf(n).opened;
          return `step ${n} done`;
        },
      }),
    ],
  });
  return { agent, started, seen, open: (n: string) => gateOf(n).open() };
}

function setup(model: ScriptedModel = new RecordingModel(), runnerOptions: OpenAIAgentsRunnerOptions = {}) {
  const { agent, started, seen, open } = controlAgent();
  const definition = openAIAgentsSession(agent, {
    name: "control",
    model,
    ...runnerOptions,
    policies: {
      careful_write: { effect: "non_idempotent_write", needsApproval: false },
      blunt_write: { effect: "non_idempotent_write", needsApproval: false },
    },
    // Many quick attempts: a first step refused until a steered message joins is retried until it does.
    modelRetry: { maxAttempts: 100, initialDelayMs: 5, maxDelayMs: 50 },
    toolBackoff: { initialDelayMs: 5, maxDelayMs: 20 },
    cancelGraceMs: 5_000,
  });
  const store = new MemoryStore();
  const worker = new Worker({ store, sessions: [definition], pollIntervalMs: 25 }).start();
  workers.push(worker);
  return { client: new SessionClient({ store }), store, started, seen, open, definition };
}

const callsOf = (snapshot: SessionSnapshot) =>
  Object.fromEntries((snapshot.turn?.calls ?? []).map((call) => [call.name, call.status]));

const storedLines = async (store: MemoryStore, sessionId: string) =>
  promptOf(((await memoryRawReader(store).history(sessionId)) as HistoryItem[]).map((h) => h.item as AgentInputItem));

describe("cancelling a turn", () => {
  it("passes the session's cancelGraceMs on to core", () => {
    expect(setup().definition.cancelGraceMs).toBe(5_000);
  });

  it("aborts a model call in flight through ModelRequest.signal, and the next turn reads the note", async () => {
    const model = new RecordingModel();
    const { client } = setup(model);
    const text = "openai-agents: a model call that never answers\nhang model";
    const { sessionId } = await client.startSession({ agent: "control", message: text });
    await until("the model call hangs", () => scriptedHangs(text).started === 1);
    expect(scriptedHangs(text).aborted).toBe(0);

    await client.cancelTurn(sessionId, { reason: "taking too long" });
    const done = await client.waitUntilIdle(sessionId, { timeoutMs: 10_000 });
    expect(done.turn?.phase).toBe("cancelled");
    expect(done.turn?.cancellation?.modelCallAborted).toBe(true);
    // The model saw the signal of the SDK's request abort: the abort went through the SDK.
    expect(scriptedHangs(text)).toEqual({ started: 1, aborted: 1 });
    expect(model.signals.at(-1)?.aborted).toBe(true);
    expect(done.messages.at(-1)?.text).toMatch(/^\[previous turn cancelled\].*\(reason: taking too long\)/s);

    await client.sendMessage(sessionId, "what happened?");
    const next = await client.waitFor(sessionId, (s) => s.turnCount === 2 && s.status === "idle", {
      timeoutMs: 10_000,
    });
    expect(next.turn?.finalText).toBe("(noted 1 cancelled turn(s)) You said: what happened?");
  });

  it("aborts a read tool through details.signal and currentToolCall().signal: the call ends cancelled", async () => {
    const { client, started, seen } = setup();
    const { sessionId } = await client.startSession({ agent: "control", message: 'call slow_read {"id":"7"}' });
    await until("the tool runs", () => started.includes("slow_read"));
    const { framework, context } = seen.get("slow_read")!;
    expect(framework?.aborted).toBe(false);
    expect(context?.aborted).toBe(false);

    await client.cancelTurn(sessionId);
    const done = await client.waitUntilIdle(sessionId, { timeoutMs: 10_000 });
    expect(done.turn?.phase).toBe("cancelled");
    expect(framework?.aborted).toBe(true);
    expect(context?.aborted).toBe(true);
    // It threw because the signal aborted; a read may be repeated, so that is `cancelled`.
    expect(callsOf(done)).toEqual({ slow_read: "cancelled" });
  });

  it("lets a ToolCancelledError reach the engine as itself: a single-attempt call ends cancelled, not unknown", async () => {
    const { client, started } = setup();
    const { sessionId } = await client.startSession({
      agent: "control",
      message: "call careful_write {}\ncall blunt_write {}",
    });
    await until("both tools run", () => started.includes("careful_write") && started.includes("blunt_write"));
    await client.cancelTurn(sessionId, { reason: "changed my mind" });
    const done = await client.waitUntilIdle(sessionId, { timeoutMs: 10_000 });
    expect(done.turn?.phase).toBe("cancelled");
    expect(callsOf(done)).toEqual({ careful_write: "cancelled", blunt_write: "outcome_unknown" });
    const careful = done.turn!.calls.find((call) => call.name === "careful_write")!;
    expect(careful.message).toContain("stopped before writing anything");
  });

  it("hands callTool's signal to the tool as details.signal; its ToolCancelledError rejects as itself", async () => {
    let received: AbortSignal | undefined;
    const agent = new Agent({
      name: "direct",
      tools: [
        durableTool({
          name: "wait",
          description: "Waits for its signal.",
          parameters: z.object({}),
          execute: async (_args, _context, details) => {
            received = details?.signal;
            await abortedBy(details!.signal!).catch(() => {
              throw new ToolCancelledError();
            });
            return "never";
          },
        }),
      ],
    });
    const runner = new OpenAIAgentsRunner(agent, { model: new ScriptedModel() });
    const controller = new AbortController();
    const call = runner.callTool({
      sessionId: "s",
      turnId: "t",
      toolCallId: "c",
      name: "wait",
      arguments: "{}",
      attempt: 1,
      idempotencyKey: "s/t/c",
      signal: controller.signal,
    });
    await until("the tool runs", () => received !== undefined);
    expect(received).toBe(controller.signal);
    controller.abort();
    const error = await call.catch((e: unknown) => e);
    expect(ToolCancelledError.isInstance(error)).toBe(true);
  });
});

describe("steering a turn", () => {
  const script = 'call step {"n":"1"}\nthen\ncall step {"n":"2"}';
  const turn = `user: ${script}`;

  it("puts each steered message right after the tool results it followed, on every later step, once", async () => {
    const model = new RecordingModel();
    const { client, store, started, open } = setup(model);
    const { sessionId } = await client.startSession({ agent: "control", message: script });
    await until("step 1 runs", () => started.includes("step 1"));
    await client.steer(sessionId, "also check the invoice");
    await client.waitFor(sessionId, (s) => s.turn?.steered.length === 1, { timeoutMs: 10_000 });
    open("1");
    await until("step 2 runs", () => started.includes("step 2"));
    await client.steer(sessionId, "and the shipping address");
    await client.waitFor(sessionId, (s) => s.turn?.steered.length === 1, { timeoutMs: 10_000 });
    open("2");
    const done = await client.waitUntilIdle(sessionId, { timeoutMs: 10_000 });

    expect(done.turn?.phase).toBe("completed");
    expect(done.turn?.joined.map((j) => j.modelStep)).toEqual([2, 3]);
    expect(done.turn?.finalText).toBe(
      "Results: step -> step 1 done | step -> step 2 done (also: also check the invoice | and the shipping address)",
    );
    expect(model.inputs).toEqual([
      [turn],
      [turn, "call: step", "result: step", "user: also check the invoice"],
      [
        turn,
        "call: step",
        "result: step",
        "user: also check the invoice",
        "call: step",
        "result: step",
        "user: and the shipping address",
      ],
    ]);
    // Core stored each steered message when it joined; the turn's own items hold neither.
    expect(await storedLines(store, sessionId)).toEqual([
      turn,
      "user: also check the invoice",
      "user: and the shipping address",
      "call: step",
      "result: step",
      "call: step",
      "result: step",
      "assistant",
    ]);
  });

  it("places them the same way when each step restores the run state from its string (no live state)", async () => {
    const model = new RecordingModel();
    const { client, store, started, open } = setup(model, { liveRunStates: 0 });
    const { sessionId } = await client.startSession({ agent: "control", message: script });
    await until("step 1 runs", () => started.includes("step 1"));
    await client.steer(sessionId, "first aside");
    await client.waitFor(sessionId, (s) => s.turn?.steered.length === 1, { timeoutMs: 10_000 });
    open("1");
    await until("step 2 runs", () => started.includes("step 2"));
    await client.steer(sessionId, "second aside");
    await client.waitFor(sessionId, (s) => s.turn?.steered.length === 1, { timeoutMs: 10_000 });
    open("2");
    const done = await client.waitUntilIdle(sessionId, { timeoutMs: 10_000 });
    expect(done.turn?.finalText).toMatch(/\(also: first aside \| second aside\)$/);
    expect(model.inputs.at(-1)).toEqual([
      turn,
      "call: step",
      "result: step",
      "user: first aside",
      "call: step",
      "result: step",
      "user: second aside",
    ]);
    expect((await storedLines(store, sessionId)).filter((line) => line.endsWith("aside"))).toEqual([
      "user: first aside",
      "user: second aside",
    ]);
  });

  it("puts a message that joined before a retried first step right after the turn's message, on every step", async () => {
    const model = new OverloadedModel();
    const { client, store, open } = setup(model);
    open("only");
    const { sessionId } = await client.startSession({ agent: "control", message: 'call step {"n":"only"}' });
    await until("the first step failed once", () => model.refused >= 1);
    await client.steer(sessionId, "use the new address");
    const done = await client.waitUntilIdle(sessionId, { timeoutMs: 10_000 });

    expect(done.turn?.phase).toBe("completed");
    expect(done.turn?.finalText).toBe("Results: step -> step only done (also: use the new address)");
    expect(done.turn?.joined).toEqual([expect.objectContaining({ modelStep: 1, afterToolCallId: null })]);
    const message = 'user: call step {"n":"only"}';
    expect(model.inputs.slice(-2)).toEqual([
      [message, "user: use the new address"],
      [message, "user: use the new address", "call: step", "result: step"],
    ]);
    expect(await storedLines(store, sessionId)).toEqual([
      message,
      "user: use the new address",
      "call: step",
      "result: step",
      "assistant",
    ]);
  });

  it("hands the placed input to the application's own callModelInputFilter, whose result the model gets", async () => {
    const seenByFilter: string[][] = [];
    const own: CallModelInputFilter = ({ modelData }) => {
      seenByFilter.push(promptOf(modelData.input));
      return { ...modelData, input: [...modelData.input, { type: "message", role: "user", content: "(filtered)" }] };
    };
    const model = new RecordingModel();
    const { agent } = controlAgent();
    const runner = new OpenAIAgentsRunner(agent, { model, runConfig: { callModelInputFilter: own } });
    const history = [runner.userItem("message", 'call slow_read {"id":"1"}')];
    history.push(runner.userItem("message", "an aside"));
    const joined = [{ item: history[1]!, historyIndex: 1, modelStep: 1, afterToolCallId: null }];
    const base = { sessionId: "s", turnId: "t", history, turnStart: 0, emit: () => {} };
    const first = await runner.runModel({
      ...base,
      modelStep: 1,
      runState: null,
      outcomes: [],
      joined,
      signal: new AbortController().signal,
    });
    if (first.kind !== "tool_calls") throw new Error("expected tool calls");
    const outcomes: RecordedOutcome[] = first.calls.map((call) => ({
      toolCallId: call.toolCallId,
      name: call.name,
      status: "succeeded",
      text: "read 1",
      output: "read 1",
    }));
    const second = await runner.runModel({
      ...base,
      modelStep: 2,
      runState: first.runState,
      outcomes,
      joined,
      signal: new AbortController().signal,
    });
    const message = 'user: call slow_read {"id":"1"}';
    expect(seenByFilter).toEqual([
      [message, "user: an aside"],
      [message, "user: an aside", "call: slow_read", "result: slow_read"],
    ]);
    expect(model.inputs).toEqual([
      [message, "user: an aside", "user: (filtered)"],
      [message, "user: an aside", "call: slow_read", "result: slow_read", "user: (filtered)"],
    ]);
    if (second.kind !== "final") throw new Error("expected a final answer");
    expect(second.text).toBe("Results: slow_read -> read 1 (also: an aside | (filtered))");
    // The turn's items are what the SDK generated: no steered message, nothing the filter added.
    expect(promptOf(second.items.map((item) => item.item as AgentInputItem))).toEqual([
      "call: slow_read",
      "result: slow_read",
      "assistant",
    ]);
  });
});
