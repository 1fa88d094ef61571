/**
 * The run state this runner hands the engine between the RunModel steps of one turn: the turn's
 * model messages so far (never the earlier history, which the engine hands back on every step)
 * and the calls of the last response that still wait for their outcomes. It carries `version`; every
 * read goes through `runStateCodec.decode`, which throws `StoredStateError` (format
 * `ai_sdk_run_state`) for a state of an unknown version or a damaged one.
 */
import { StoredStateError } from "@durable-agents/core";
import type { ModelMessage } from "ai";
import { z } from "zod";

export const RUN_STATE_FORMAT = "ai_sdk_run_state";
export const RUN_STATE_VERSION = 1;
export const supportedRunStateVersions = [1] as const;

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
    } catch (error) {
      throw new StoredStateError(RUN_STATE_FORMAT, "malformed", undefined, "the AI SDK run state is not JSON", {
        cause: error,
      });
    }
    const version = typeof value === "object" && value !== null ? (value as { version?: unknown }).version : undefined;
    if (!(supportedRunStateVersions as readonly unknown[]).includes(version)) {
      const newer = typeof version === "number" && Number.isInteger(version) && version > RUN_STATE_VERSION;
      throw new StoredStateError(
        RUN_STATE_FORMAT,
        newer ? "unknown_version" : "malformed",
        version,
        newer
          ? `the AI SDK run state has version ${version}, newer than this release reads (${supportedRunStateVersions.join(", ")}); upgrade to read it`
          : `the AI SDK run state has no supported version (found ${JSON.stringify(version) ?? "none"})`,
      );
    }
    const parsed = RunStateSchema.safeParse(value);
    if (!parsed.success) {
      const issues = parsed.error.issues.map((issue) => `${issue.path.join(".") || "(root)"}: ${issue.message}`);
      throw new StoredStateError(
        RUN_STATE_FORMAT,
        "malformed",
        version,
        `the AI SDK run state is damaged: ${issues.join("; ")}`,
        {
          cause: parsed.error,
        },
      );
    }
    return { messages: parsed.data.messages as unknown as ModelMessage[], pending: parsed.data.pending };
  },
};
