/**
 * The run state this runner hands the engine between the RunModel steps of one turn: the turn's
 * model messages so far (never the earlier history, which the engine hands back on every step)
 * and the calls of the last response that still wait for their outcomes.
 */
import { InvalidInputError } from "@durable-agents/core";
import type { ModelMessage } from "ai";
import { z } from "zod";

const RUN_STATE_VERSION = 1;

const RunStateSchema = z.object({
  version: z.literal(RUN_STATE_VERSION),
  /** Assistant and tool messages of the turn, after its user item, in order. */
  messages: z.array(z.object({ role: z.enum(["assistant", "tool"]) }).passthrough()),
  /** The calls of the last model response, in model order. */
  pending: z.array(z.object({ toolCallId: z.string(), name: z.string() })),
});

export interface AiSdkRunState {
  readonly messages: readonly ModelMessage[];
  readonly pending: readonly { readonly toolCallId: string; readonly name: string }[];
}

export const runStateCodec = {
  encode(state: AiSdkRunState): string {
    return JSON.stringify({ version: RUN_STATE_VERSION, messages: state.messages, pending: state.pending });
  },
  decode(text: string): AiSdkRunState {
    let value: unknown;
    try {
      value = JSON.parse(text);
    } catch {
      throw new InvalidInputError("the AI SDK run state is not JSON");
    }
    const parsed = RunStateSchema.safeParse(value);
    if (!parsed.success) {
      throw new InvalidInputError(
        "the AI SDK run state does not have the expected shape",
        parsed.error.issues.map((issue) => `${issue.path.join(".") || "(root)"}: ${issue.message}`),
      );
    }
    return { messages: parsed.data.messages as unknown as ModelMessage[], pending: parsed.data.pending };
  },
};
