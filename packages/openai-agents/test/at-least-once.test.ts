import { describe, expect, it } from "vitest";
import { z } from "zod";
import {
  Agent,
  shellTool,
  Usage,
  type Model,
  type ModelRequest,
  type ModelResponse,
  type StreamEvent,
} from "@openai/agents";
import { durableTool, OpenAIAgentsRunner } from "../src/index.js";
import { runTurn } from "./harness.js";

/** Asks for a shell command, then (once the shell's output is in its input) for a function tool, then answers. */
class ShellThenToolModel implements Model {
  calls = 0;
  respond(request: ModelRequest): ModelResponse {
    const items = request.input as { type?: string; output?: unknown }[];
    const has = (type: string) => items.some((item) => item.type === type);
    const usage = new Usage({ requests: 1 });
    if (!has("shell_call_output")) {
      return {
        usage,
        output: [{ type: "shell_call", callId: "sh_1", status: "completed", action: { commands: ["echo hi"] } }],
      };
    }
    if (!has("function_call")) {
      return {
        usage,
        output: [
          {
            type: "function_call",
            callId: "fn_1",
            name: "note",
            arguments: '{"text":"after shell"}',
            status: "completed",
          },
        ],
      };
    }
    return {
      usage,
      output: [
        {
          type: "message",
          role: "assistant",
          status: "completed",
          content: [{ type: "output_text", text: "all done" }],
        },
      ],
    };
  }
  async getResponse(request: ModelRequest) {
    this.calls++;
    return this.respond(request);
  }
  async *getStreamedResponse(request: ModelRequest): AsyncIterable<StreamEvent> {
    this.calls++;
    const response = this.respond(request);
    yield {
      type: "response_done",
      response: {
        id: `r${this.calls}`,
        usage: { requests: 1, inputTokens: 0, outputTokens: 0, totalTokens: 0 },
        output: response.output,
      },
    } as StreamEvent;
  }
}

describe("allowAtLeastOnceTools", () => {
  it("runs a local shell tool inside RunModel (several model calls in one step), function tools still in their own step", async () => {
    const commands: string[][] = [];
    const shell = shellTool({
      shell: {
        run: async (action) => {
          commands.push(action.commands);
          return { output: [{ stdout: "hi\n", stderr: "", outcome: { type: "exit", exitCode: 0 } }] };
        },
      },
    });
    const notes: string[] = [];
    const note = durableTool({
      name: "note",
      description: "Note.",
      parameters: z.object({ text: z.string() }),
      execute: ({ text }) => {
        notes.push(text);
        return "noted";
      },
    });
    const model = new ShellThenToolModel();
    const runner = new OpenAIAgentsRunner(new Agent({ name: "ops", tools: [shell, note] }), {
      model,
      allowAtLeastOnceTools: true,
    });
    expect(runner.tools().map((t) => t.name)).toEqual(["note"]);
    const turn = await runTurn(runner, [], "do it");
    expect(commands).toEqual([["echo hi"]]);
    expect(turn.steps.map((s) => s.result.usage.modelCalls)).toEqual([2, 1]);
    expect(turn.steps[0]!.result.kind === "tool_calls" && turn.steps[0]!.result.calls.map((c) => c.name)).toEqual([
      "note",
    ]);
    expect(notes).toEqual(["after shell"]);
    expect(turn.text).toBe("all done");
    expect(turn.items[0]!.display).toEqual({
      role: "assistant",
      text: "",
      toolCalls: [{ toolCallId: "sh_1", name: "shell_call", arguments: '{"commands":["echo hi"]}' }],
    });
    expect(turn.items[1]!.display).toMatchObject({ role: "tool", toolCallId: "sh_1" });
  });
});
