/**
 * The runner's `describe()`: the agent as plain JSON, which core hashes into the fingerprint a
 * session is pinned to: the model name, the instructions, every tool with its argument schema (JSON
 * Schema), and this package's version. The AI SDK has no handoffs: one agent.
 */
import { createRequire } from "node:module";
import type { RunnerDescription } from "@durable-agents/core";
import { asSchema, type Instructions, type LanguageModel, type Tool, type ToolSet } from "ai";

const packageJson = createRequire(import.meta.url)("../package.json") as { name: string; version: string };

/** A model as a name: a gateway model ID as it is, a provider model as `<provider>:<modelId>`. */
export function modelName(model: LanguageModel): string {
  if (typeof model === "string") return model;
  const { provider, modelId } = model as { provider?: unknown; modelId?: unknown };
  return `${typeof provider === "string" ? provider : "(provider)"}:${typeof modelId === "string" ? modelId : "(model)"}`;
}

/** A tool's argument schema as JSON Schema, when the schema gives it at once (a schema built from a promise does not). */
function parametersOf(tool: Tool): unknown {
  try {
    const schema = asSchema(tool.inputSchema).jsonSchema;
    if (typeof (schema as { then?: unknown })?.then === "function") return "(asynchronous JSON schema: not described)";
    return schema;
  } catch (error) {
    return `(schema without JSON Schema: ${error instanceof Error ? error.message : String(error)})`;
  }
}

const instructionsText = (instructions: Instructions | undefined): string | null =>
  instructions === undefined ? null : typeof instructions === "string" ? instructions : JSON.stringify(instructions);

export function describeAgent(options: {
  readonly model: LanguageModel;
  readonly instructions?: Instructions;
  readonly tools: ToolSet;
}): RunnerDescription {
  return {
    adapter: { name: packageJson.name, version: packageJson.version },
    agents: [
      {
        name: "agent",
        model: modelName(options.model),
        instructions: instructionsText(options.instructions),
        tools: Object.entries(options.tools).map(([name, tool]) => {
          const type = (tool as { type?: string }).type ?? "function";
          return type === "provider"
            ? { name, type, id: (tool as { id?: unknown }).id ?? null, parameters: null }
            : { name, type, parameters: parametersOf(tool) };
        }),
        handoffs: [],
      },
    ],
  };
}
