/**
 * Cancelling and steering a turn through core's real Worker, SessionClient and the in-memory store:
 * the cancellation's abort reaches the model call and the tools through the SDK's own signals, and
 * steered messages reach the model where they joined the turn.
 */
import {
  SessionClient,
  ToolCancelledError,
  Worker,
  currentToolCall,
  type HistoryItem,
  type SessionSnapshot,
} from "@durable-agents/core";
import { scriptedHangs } from "@durable-agents/core/testing";
import { memoryRawReader, MemoryStore } from "@durable-agents/store-memory";
import { tool, type ModelMessage } from "ai";
import { MockLanguageModelV4 } from "ai/test";
import { afterEach, describe, expect, it } from "vitest";
import { z } from "zod";
import { aiSdkSession, AiSdkRunner } from "../src/index.js";
import { ScriptedLanguageModel } from "../src/testing/index.js";
import { callInput } from "./support/call-input.js";

const running: Worker[] = [];
afterEach(async () => {
  await Promise.all(running.splice(0).map((worker) => worker.stop({ timeoutMs: 2_000 })));
});

/** Waits for a condition the test cannot subscribe to (it fails the test when it never holds). */
async function until(what: string, check: () => boolean, timeoutMs = 10_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!check()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting until ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 5));
  }
}

/** A promise a tool waits on, released by the test. */
function gate() {
  let open!: () => void;
  const opened = new Promise<void>((resolve) => {
    open = resolve;
  });
  return { opened, open };
}

/** Rejects with the signal's reason once it aborts (what a tool that honours its signal does). */
const abortedBy = (signal: AbortSignal): Promise<never> =>
  new Promise<never>((_, reject) => {
    const stop = () => reject(signal.reason instanceof Error ? signal.reason : new Error("aborted"));
    if (signal.aborted) stop();
    else signal.addEventListener("abort", stop, { once: true });
  });

interface Seen {
  /** The `abortSignal` the tool's `execute` got, and `currentToolCall().signal` inside it. */
  framework: AbortSignal | undefined;
  context: AbortSignal | undefined;
}

function setup(model: MockLanguageModelV4 = new ScriptedLanguageModel()) {
  const started: string[] = [];
  const seen = new Map<string, Seen>();
  const gates = new Map<string, ReturnType<typeof gate>>();
  const note = (name: string, framework: AbortSignal | undefined) => {
    started.push(name);
    seen.set(name, { framework, context: currentToolCall()?.signal });
  };
  const agent = aiSdkSession({
    name: "control",
    model,
    instructions: "Follow the script.",
    tools: {
      // Stops on the SDK's own tool signal, with the signal's reason (an AbortError).
      slow_read: tool({
        description: "Reads slowly",
        inputSchema: z.object({ id: z.string() }),
        execute: async ({ id }, { abortSignal }) => {
          note("slow_read", abortSignal);
          await abortedBy(abortSignal!);
          return `read ${id}`;
        },
      }),
      // Stops on core's context signal and says it changed nothing.
      careful_write: tool({
        description: "Writes carefully",
        inputSchema: z.object({}),
        execute: async (_input, { abortSignal }) => {
          note("careful_write", abortSignal);
          await abortedBy(currentToolCall()!.signal!).catch((error: unknown) => {
            throw new ToolCancelledError("stopped before writing anything", { cause: error });
          });
          return "written";
        },
      }),
      // Stops on the signal too, but with a plain error: it cannot say what it changed.
      blunt_write: tool({
        description: "Writes bluntly",
        inputSchema: z.object({}),
        execute: async (_input, { abortSignal }) => {
          note("blunt_write", abortSignal);
          await abortedBy(abortSignal!);
          return "written";
        },
      }),
      // Waits for the test to open its gate.
      step: tool({
        description: "A step of the work",
        inputSchema: z.object({ n: z.string() }),
        execute: async ({ n }) => {
          started.push(`step ${n}`);
          const g = gates.get(n) ?? gate();
          gates.set(n, g);
          await g.opened;
          return `step ${n} done`;
        },
      }),
    },
    policies: {
      slow_read: { effect: "read" },
      careful_write: { effect: "non_idempotent_write", needsApproval: false },
      blunt_write: { effect: "non_idempotent_write", needsApproval: false },
      step: { effect: "read" },
    },
    // Many quick attempts: a first step refused until a steered message joins is retried until it does.
    modelRetry: { maxAttempts: 100, initialDelayMs: 5, maxDelayMs: 50 },
    toolBackoff: { initialDelayMs: 5, maxDelayMs: 20 },
    cancelGraceMs: 5_000,
  });
  const store = new MemoryStore();
  const worker = new Worker({ store, sessions: [agent], pollIntervalMs: 25 }).start();
  running.push(worker);
  const open = (n: string) => {
    const g = gates.get(n) ?? gate();
    gates.set(n, g);
    g.open();
  };
  return { client: new SessionClient({ store }), store, started, seen, open };
}

const callsOf = (snapshot: SessionSnapshot) =>
  Object.fromEntries((snapshot.turn?.calls ?? []).map((call) => [call.name, call.status]));

/** A prompt as role and text pairs (user and assistant text; the tool calls and results by name). */
const promptOf = (prompt: MockLanguageModelV4["doStreamCalls"][number]["prompt"]) =>
  prompt.map((message) => {
    if (message.role === "system") return "system";
    if (message.role === "user")
      return `user: ${message.content.map((part) => (part.type === "text" ? part.text : "")).join("")}`;
    if (message.role === "tool")
      return `tool: ${message.content.map((part) => (part.type === "tool-result" ? part.toolName : "")).join(",")}`;
    const calls = message.content.flatMap((part) => (part.type === "tool-call" ? [part.toolName] : []));
    return calls.length > 0 ? `call: ${calls.join(",")}` : "assistant";
  });

describe("cancelling a turn", () => {
  it("aborts a model call in flight through the SDK's own abortSignal, and the next turn reads the note", async () => {
    const model = new ScriptedLanguageModel();
    const { client } = setup(model);
    const text = "ai-sdk: a model call that never answers\nhang model";
    const { sessionId } = await client.startSession({ agent: "control", message: text });
    await until("the model call hangs", () => scriptedHangs(text).started === 1);
    expect(scriptedHangs(text).aborted).toBe(0);

    await client.cancelTurn(sessionId, { reason: "taking too long" });
    const done = await client.waitUntilIdle(sessionId, { timeoutMs: 10_000 });
    expect(done.turn?.phase).toBe("cancelled");
    expect(done.turn?.cancellation?.modelCallAborted).toBe(true);
    // The model saw the signal streamText handed it abort: the abort went through the SDK.
    expect(scriptedHangs(text)).toEqual({ started: 1, aborted: 1 });
    expect(model.doStreamCalls.at(-1)?.abortSignal?.aborted).toBe(true);
    expect(done.messages.at(-1)?.text).toMatch(/^\[previous turn cancelled\].*\(reason: taking too long\)/s);

    await client.sendMessage(sessionId, "what happened?");
    const next = await client.waitFor(sessionId, (s) => s.turnCount === 2 && s.status === "idle", {
      timeoutMs: 10_000,
    });
    expect(next.turn?.finalText).toBe("(noted 1 cancelled turn(s)) You said: what happened?");
  });

  it("aborts a read tool through execute's abortSignal and currentToolCall().signal: the call ends cancelled", async () => {
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

  it("hands callTool's signal to execute and to currentToolCall() when the runner is called directly", async () => {
    let frameworkSignal: AbortSignal | undefined;
    let contextSignal: AbortSignal | undefined;
    const runner = new AiSdkRunner({
      model: new ScriptedLanguageModel(),
      tools: {
        wait: tool({
          description: "Waits for its signal",
          inputSchema: z.object({}),
          execute: async (_input, { abortSignal }) => {
            frameworkSignal = abortSignal;
            contextSignal = currentToolCall()?.signal;
            await abortedBy(contextSignal!).catch(() => {
              throw new ToolCancelledError();
            });
            return "never";
          },
        }),
      },
    });
    const controller = new AbortController();
    const call = runner.callTool({ ...callInput("wait"), signal: controller.signal });
    await until("the tool runs", () => contextSignal !== undefined);
    controller.abort();
    const error = await call.catch((e: unknown) => e);
    expect(ToolCancelledError.isInstance(error)).toBe(true);
    expect(frameworkSignal).toBe(controller.signal);
    expect(contextSignal).toBe(controller.signal);
  });
});

describe("steering a turn", () => {
  it("puts each steered message right after the tool results it followed, on every later step, once", async () => {
    const model = new ScriptedLanguageModel();
    const { client, store, started, open } = setup(model);
    const { sessionId } = await client.startSession({
      agent: "control",
      message: 'call step {"n":"1"}\nthen\ncall step {"n":"2"}',
    });
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
    const turn = 'user: call step {"n":"1"}\nthen\ncall step {"n":"2"}';
    expect(model.doStreamCalls.map((call) => promptOf(call.prompt))).toEqual([
      ["system", turn],
      ["system", turn, "call: step", "tool: step", "user: also check the invoice"],
      [
        "system",
        turn,
        "call: step",
        "tool: step",
        "user: also check the invoice",
        "call: step",
        "tool: step",
        "user: and the shipping address",
      ],
    ]);

    // Core stored each steered message when it joined; the turn's own items hold neither.
    const stored = (await memoryRawReader(store).history(sessionId)) as HistoryItem[];
    const texts = stored.map((entry) => {
      const message = entry.item as ModelMessage;
      return `${message.role}${typeof message.content === "string" ? `: ${message.content}` : ""}`;
    });
    expect(texts).toEqual([
      turn,
      "user: also check the invoice",
      "user: and the shipping address",
      "assistant",
      "tool",
      "assistant",
      "tool",
      "assistant",
    ]);
  });

  it("puts a message that joined before a retried first step right after the turn's message, on every step", async () => {
    const scripted = new ScriptedLanguageModel();
    let refused = 0;
    // Overloaded until a second user message is in its input (so the first step is retried until the steered one joins).
    const model = new MockLanguageModelV4({
      doStream: async (options) => {
        if (options.prompt.filter((message) => message.role === "user").length < 2) {
          refused++;
          throw new Error("overloaded, try again");
        }
        return scripted.doStream(options);
      },
    });
    const { client, store, open } = setup(model);
    open("only");
    const { sessionId } = await client.startSession({ agent: "control", message: 'call step {"n":"only"}' });
    await until("the first step failed once", () => refused >= 1);
    await client.steer(sessionId, "use the new address");
    const done = await client.waitUntilIdle(sessionId, { timeoutMs: 10_000 });

    expect(done.turn?.phase).toBe("completed");
    expect(done.turn?.finalText).toBe("Results: step -> step only done (also: use the new address)");
    expect(done.turn?.joined).toEqual([expect.objectContaining({ modelStep: 1, afterToolCallId: null })]);
    const turn = 'user: call step {"n":"only"}';
    expect(scripted.doStreamCalls.map((call) => promptOf(call.prompt))).toEqual([
      ["system", turn, "user: use the new address"],
      ["system", turn, "user: use the new address", "call: step", "tool: step"],
    ]);
    const stored = (await memoryRawReader(store).history(sessionId)) as HistoryItem[];
    expect(stored.map((entry) => (entry.item as ModelMessage).role)).toEqual([
      "user",
      "user",
      "assistant",
      "tool",
      "assistant",
    ]);
  });
});
