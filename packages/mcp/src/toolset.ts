/**
 * `McpToolset`: the tools of the MCP servers an application attaches to an agent, as a runner needs
 * them: a current tool list with the effect each tool's annotations suggest, and one durable call
 * per `call` (arguments validated against the tool's input schema, the call's idempotency key and
 * attempt in `_meta`, the result as the engine's outcome).
 */
import { PolicyError, type ToolEffect } from "@durable-agents/core";
import type { CallToolResult, ToolDescription } from "@durable-agents/core/engine";
import { ErrorCode, McpError, type Tool } from "@modelcontextprotocol/sdk/types.js";
import { AjvJsonSchemaValidator } from "@modelcontextprotocol/sdk/validation/ajv";
import type { JsonSchemaType, JsonSchemaValidator } from "@modelcontextprotocol/sdk/validation/types.js";
import { ServerConnection } from "./connection.js";
import { effectOfHints, type McpToolHints } from "./effects.js";
import { McpConnectionError, errorText } from "./errors.js";
import { durableMeta, type DurableCallMeta } from "./meta.js";
import { outcomeOfResult } from "./result-text.js";
import { checkServers, type McpServerConfig } from "./server-config.js";

/** One tool of an MCP server, as the agent sees it. */
export interface McpTool {
  /** The name the model and the policies use: the server's name for it, after the server's `toolPrefix`. */
  readonly name: string;
  /** The server's name in the application's list. */
  readonly server: string;
  /** The tool's name on its server. */
  readonly serverToolName: string;
  readonly title?: string;
  readonly description: string;
  /** The tool's input JSON Schema (an object schema), as the server lists it. */
  readonly inputSchema: Readonly<Record<string, unknown>>;
  readonly outputSchema?: Readonly<Record<string, unknown>>;
  /** The server's behaviour hints (untrusted: a policy overrides what they imply). */
  readonly annotations?: McpToolHints & { readonly title?: string };
  /** The effect the hints imply (`effectOfHints`); used when no policy names the tool. */
  readonly effect: ToolEffect;
}

/** The durable call a `call` belongs to (core's `CallToolInput` has these fields). */
export interface McpCallContext extends DurableCallMeta {
  /** Aborted when the call must stop: the request is cancelled (`notifications/cancelled`). */
  readonly signal?: AbortSignal;
}

export interface McpToolsetOptions {
  /**
   * Problems outside a call: a tool list that could not be read after the server said it changed, a
   * tool dropped because another server offers one with the same name. Default: console.warn.
   */
  readonly onError?: (error: unknown) => void;
}

interface Entry {
  readonly tool: McpTool;
  validator?: JsonSchemaValidator<unknown> | null;
}

const jsonRpcRefusals = new Set<number>([ErrorCode.InvalidParams, ErrorCode.MethodNotFound]);

export class McpToolset {
  readonly #connections: ReadonlyMap<string, ServerConnection>;
  readonly #onError: (error: unknown) => void;
  /** Each server's tools as it listed them last (after its `tools` filter). */
  readonly #listed = new Map<string, readonly Tool[]>();
  #entries = new Map<string, Entry>();
  /** Every name a server ever offered, with its server: a call to a tool that went away says so. */
  readonly #seen = new Map<string, string>();
  readonly #listeners = new Set<(tools: readonly McpTool[]) => void>();
  #tools: readonly McpTool[] = [];
  #version = 0;
  #starting = true;
  #validator: AjvJsonSchemaValidator | null = null;

  private constructor(servers: readonly McpServerConfig[], options: McpToolsetOptions) {
    this.#onError = options.onError ?? ((error) => console.warn("[durable-agents mcp]", errorText(error)));
    const connections = new Map<string, ServerConnection>();
    for (const server of checkServers(servers)) {
      connections.set(
        server.config.name,
        new ServerConnection(server, {
          tools: (name, tools) => this.#listedTools(name, tools),
          error: (error) => this.#onError(error),
        }),
      );
    }
    this.#connections = connections;
  }

  /**
   * Connects to every server and reads their tool lists. Fails with `McpConnectionError` when a
   * server cannot be reached within its `connectTimeoutMs` (the others are closed again), and with
   * `PolicyError` when a server lacks a tool its `tools` filter names or two servers offer one name.
   */
  static async connect(servers: readonly McpServerConfig[], options: McpToolsetOptions = {}): Promise<McpToolset> {
    const toolset = new McpToolset(servers, options);
    const results = await Promise.allSettled([...toolset.#connections.values()].map((c) => c.open()));
    const failures = results.flatMap((r) => (r.status === "rejected" ? [r.reason as unknown] : []));
    try {
      if (failures.length > 0) {
        const connection = failures.filter((f): f is McpConnectionError => McpConnectionError.isInstance(f));
        if (failures.length === 1 || connection.length < failures.length)
          throw failures.find((f) => !McpConnectionError.isInstance(f)) ?? failures[0];
        throw new McpConnectionError(
          connection.map((f) => f.server).join(", "),
          connection.map((f) => f.message).join("; "),
          { cause: connection[0] },
        );
      }
      toolset.#starting = false;
      toolset.#rebuild(true);
    } catch (error) {
      await toolset.close();
      throw error;
    }
    return toolset;
  }

  /** The tools the servers offer now, in server order, then in each server's order. */
  tools(): readonly McpTool[] {
    return this.#tools;
  }

  tool(name: string): McpTool | undefined {
    return this.#entries.get(name)?.tool;
  }

  /**
   * What a definition's fingerprint takes from the servers' tools as listed now (a runner's
   * `describe()` adds it): each tool's name, server, name on its server, input schema and the
   * effect its hints imply, sorted by name. Descriptions and titles are left out, as for function tools.
   */
  describe(): { name: string; server: string; serverToolName: string; inputSchema: unknown; effect: string }[] {
    return this.#tools
      .map((tool) => ({
        name: tool.name,
        server: tool.server,
        serverToolName: tool.serverToolName,
        inputSchema: tool.inputSchema,
        effect: tool.effect,
      }))
      .sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
  }

  /** The tools as a runner reports them to core: no approval of their own, the effect their hints imply. */
  descriptions(): ToolDescription[] {
    return this.#tools.map((tool) => ({ name: tool.name, approval: "never", defaultEffect: tool.effect }));
  }

  /** Goes up by one every time the tool list changes. */
  get version(): number {
    return this.#version;
  }

  /** Called with the new list every time it changes; returns the function that stops it. */
  onToolsChanged(listener: (tools: readonly McpTool[]) => void): () => void {
    this.#listeners.add(listener);
    return () => this.#listeners.delete(listener);
  }

  /** Resolves once every tool list refresh the servers asked for so far has been read. */
  async refreshed(): Promise<void> {
    await Promise.all([...this.#connections.values()].map((c) => c.settled()));
  }

  /** The process ID of a stdio server while it runs (null for HTTP, or when it is not connected). */
  serverProcessId(server: string): number | null {
    return this.#connections.get(server)?.pid ?? null;
  }

  /**
   * One call, for real. Final failures come back as `failed` and the call is not retried: invalid
   * arguments (checked against the input schema; the server is not asked), a tool no server offers
   * any more, an `isError` result, a server that refuses the call (JSON-RPC invalid params or unknown
   * method). Everything else throws, and the engine follows the policy table: a lost connection, a
   * server that cannot be reached (the next attempt connects again), a timeout, another JSON-RPC
   * error, the call's cancellation.
   */
  async call(name: string, args: string, context: McpCallContext): Promise<CallToolResult> {
    const entry = this.#entries.get(name);
    if (!entry) {
      const server = this.#seen.get(name);
      return {
        status: "failed",
        message:
          server === undefined
            ? `no MCP server offers a tool named "${name}"`
            : `the MCP server "${server}" no longer offers the tool "${name}" (its tool list changed after the call was requested); the call was not sent`,
      };
    }
    const { tool } = entry;
    let parsed: unknown;
    try {
      parsed = args.trim() === "" ? {} : JSON.parse(args);
    } catch (error) {
      return {
        status: "failed",
        message: `Invalid arguments for tool "${name}": not valid JSON (${errorText(error)})`,
      };
    }
    if (typeof parsed !== "object" || parsed === null || Array.isArray(parsed)) {
      return { status: "failed", message: `Invalid arguments for tool "${name}": the arguments must be a JSON object` };
    }
    const validate = this.#validatorOf(entry);
    if (validate) {
      const verdict = validate(parsed);
      if (!verdict.valid)
        return { status: "failed", message: `Invalid arguments for tool "${name}": ${verdict.errorMessage}` };
    }
    const connection = this.#connections.get(tool.server)!;
    const meta = durableMeta(context);
    let result: Awaited<ReturnType<ServerConnection["callTool"]>>;
    try {
      result = await connection.callTool(tool.serverToolName, parsed as Record<string, unknown>, meta, context.signal);
    } catch (error) {
      if (context.signal?.aborted) {
        throw new Error(
          `the call was cancelled: the MCP server "${tool.server}" was sent notifications/cancelled, and answers nothing more for it`,
          { cause: error },
        );
      }
      if (McpConnectionError.isInstance(error)) throw error;
      if (error instanceof McpError && jsonRpcRefusals.has(error.code)) {
        return { status: "failed", message: `the MCP server "${tool.server}" refused the call: ${error.message}` };
      }
      throw new Error(
        `the MCP call of "${tool.serverToolName}" on server "${tool.server}" failed: ${errorText(error)}`,
        {
          cause: error,
        },
      );
    }
    const useStructuredContent = connection.server.config.useStructuredContent === true;
    return outcomeOfResult(result, { useStructuredContent });
  }

  /** Closes every connection (stdio servers are stopped). Calls after this fail. */
  async close(): Promise<void> {
    await Promise.all([...this.#connections.values()].map((c) => c.close()));
  }

  #validatorOf(entry: Entry): JsonSchemaValidator<unknown> | null {
    if (entry.validator !== undefined) return entry.validator;
    try {
      this.#validator ??= new AjvJsonSchemaValidator();
      entry.validator = this.#validator.getValidator(entry.tool.inputSchema as JsonSchemaType);
    } catch (error) {
      // A schema the validator cannot compile: the server still checks the arguments itself.
      this.#onError(
        new Error(`the input schema of MCP tool "${entry.tool.name}" cannot be compiled: ${errorText(error)}`),
      );
      entry.validator = null;
    }
    return entry.validator;
  }

  #listedTools(server: string, tools: readonly Tool[]): void {
    const config = this.#connections.get(server)!.server.config;
    const only = config.tools ? new Set(config.tools) : null;
    this.#listed.set(
      server,
      tools.filter((tool) => only === null || only.has(tool.name)),
    );
    if (this.#starting) {
      if (only) {
        const offered = new Set(tools.map((t) => t.name));
        const missing = [...only].filter((name) => !offered.has(name));
        if (missing.length > 0) {
          const known = [...offered].sort().join(", ") || "none";
          throw new PolicyError(
            `the MCP server "${server}" has no tool ${missing.map((m) => `"${m}"`).join(", ")} (its tools: ${known})`,
          );
        }
      }
      return;
    }
    this.#rebuild(false);
  }

  /** Builds the agent's view of every server's list; at start a name two servers offer is a `PolicyError`. */
  #rebuild(atStart: boolean): void {
    const entries = new Map<string, Entry>();
    for (const [server, connection] of this.#connections) {
      const config = connection.server.config;
      for (const listed of this.#listed.get(server) ?? []) {
        const tool = toMcpTool(server, config.toolPrefix ?? "", listed);
        const other = entries.get(tool.name);
        if (other) {
          const message = `the MCP servers "${other.tool.server}" and "${server}" both offer a tool named "${tool.name}"; give one of them a toolPrefix`;
          if (atStart) throw new PolicyError(message);
          this.#onError(new PolicyError(`${message} (the tool of "${server}" is left out)`));
          continue;
        }
        const previous = this.#entries.get(tool.name);
        entries.set(tool.name, previous && sameTool(previous.tool, tool) ? previous : { tool });
        this.#seen.set(tool.name, server);
      }
    }
    const before = this.#tools;
    this.#entries = entries;
    this.#tools = [...entries.values()].map((e) => e.tool);
    const changed = before.length !== this.#tools.length || this.#tools.some((tool, i) => tool !== before[i]);
    if (!changed) return;
    this.#version += 1;
    if (atStart) return;
    for (const listener of this.#listeners) {
      try {
        listener(this.#tools);
      } catch (error) {
        this.#onError(error);
      }
    }
  }
}

function toMcpTool(server: string, prefix: string, tool: Tool): McpTool {
  const annotations = tool.annotations as McpTool["annotations"] | undefined;
  return {
    name: `${prefix}${tool.name}`,
    server,
    serverToolName: tool.name,
    ...(tool.title !== undefined ? { title: tool.title } : {}),
    description: tool.description ?? "",
    inputSchema: tool.inputSchema as Record<string, unknown>,
    ...(tool.outputSchema !== undefined ? { outputSchema: tool.outputSchema as Record<string, unknown> } : {}),
    ...(annotations !== undefined ? { annotations } : {}),
    effect: effectOfHints(annotations),
  };
}

const sameTool = (a: McpTool, b: McpTool): boolean => JSON.stringify(a) === JSON.stringify(b);
