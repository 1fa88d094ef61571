/** The MCP servers an application attaches: a trusted list in code (never from session input). */
import { ConfigurationError } from "@durable-agents/core";

interface McpServerCommon {
  /** The server's name (1-64 letters, digits, '_' or '-'): in errors, in `McpTool.server`, unique in a toolset. */
  readonly name: string;
  /** Only these tools of the server (names as the server lists them); each must exist when the list is read. Default: all. */
  readonly tools?: readonly string[];
  /** Give the server's tools to the agent as `<toolPrefix><name>` (to tell two servers' tools apart). Default: no prefix. */
  readonly toolPrefix?: string;
  /** How long connecting (the handshake and reading the tool list) may take, in ms. Default 10,000. */
  readonly connectTimeoutMs?: number;
  /** How long one tool call may take, in ms (a progress notification from the server restarts it). Default 60,000. */
  readonly callTimeoutMs?: number;
  /** Give the model the JSON of a result's `structuredContent` instead of its text content. Default false. */
  readonly useStructuredContent?: boolean;
}

/** A server the toolset starts as a child process and talks to over stdin/stdout. */
export interface McpStdioServer extends McpServerCommon {
  readonly command: string;
  readonly args?: readonly string[];
  /** Added to the few variables the SDK passes on by default (HOME, PATH, SHELL, TERM, USER, LOGNAME). */
  readonly env?: Readonly<Record<string, string>>;
  readonly cwd?: string;
  /** Where the server's stderr goes. Default "inherit" (this process's stderr). */
  readonly stderr?: "inherit" | "ignore";
}

/** A server reached over Streamable HTTP. */
export interface McpHttpServer extends McpServerCommon {
  readonly url: string | URL;
  /** Sent with every request (e.g. an Authorization header). */
  readonly headers?: Readonly<Record<string, string>>;
}

export type McpServerConfig = McpStdioServer | McpHttpServer;

export const isStdio = (config: McpServerConfig): config is McpStdioServer =>
  typeof (config as McpStdioServer).command === "string";

const positive = (value: number | undefined, fallback: number, what: string, issues: string[]): number => {
  if (value === undefined) return fallback;
  if (!Number.isFinite(value) || value <= 0) issues.push(`${what} must be a positive number of milliseconds`);
  return value;
};

export interface CheckedServer {
  readonly config: McpServerConfig;
  readonly connectTimeoutMs: number;
  readonly callTimeoutMs: number;
  /** How the server is reached, for messages: `stdio: node server.js` or `http: http://...`. */
  readonly label: string;
}

/** Checks the server list; every mistake is a `ConfigurationError` listing all of them. */
export function checkServers(servers: readonly McpServerConfig[]): CheckedServer[] {
  if (!Array.isArray(servers)) throw new ConfigurationError("MCP servers must be given as an array");
  const issues: string[] = [];
  const names = new Set<string>();
  const checked: CheckedServer[] = [];
  for (const [index, server] of servers.entries()) {
    const where = typeof server?.name === "string" ? `MCP server "${server.name}"` : `MCP server #${index + 1}`;
    if (typeof server !== "object" || server === null) {
      issues.push(`${where} is not an object`);
      continue;
    }
    if (typeof server.name !== "string" || !/^[A-Za-z0-9_-]{1,64}$/.test(server.name)) {
      issues.push(`${where} needs a name of 1-64 letters, digits, '_' or '-'`);
    } else if (names.has(server.name)) {
      issues.push(`two MCP servers are named "${server.name}"`);
    }
    names.add(server.name);
    const stdio = typeof (server as McpStdioServer).command === "string";
    const http = (server as McpHttpServer).url !== undefined;
    let label = "";
    if (stdio === http) {
      issues.push(`${where} needs either a command (stdio) or a url (Streamable HTTP)`);
    } else if (stdio) {
      const s = server as McpStdioServer;
      if (s.command.length === 0) issues.push(`${where} has an empty command`);
      if (s.args !== undefined && (!Array.isArray(s.args) || s.args.some((a) => typeof a !== "string")))
        issues.push(`${where}: args must be strings`);
      label = `stdio: ${[s.command, ...(s.args ?? [])].join(" ")}`;
    } else {
      const s = server as McpHttpServer;
      try {
        const url = new URL(String(s.url));
        if (url.protocol !== "http:" && url.protocol !== "https:") issues.push(`${where}: url must be http(s)`);
        label = `http: ${url.href}`;
      } catch {
        issues.push(`${where}: url "${String(s.url)}" is not a URL`);
      }
    }
    if (
      server.tools !== undefined &&
      (!Array.isArray(server.tools) || server.tools.some((t: unknown) => typeof t !== "string"))
    )
      issues.push(`${where}: tools must be a list of tool names`);
    if (server.toolPrefix !== undefined && typeof server.toolPrefix !== "string")
      issues.push(`${where}: toolPrefix must be a string`);
    const connectTimeoutMs = positive(server.connectTimeoutMs, 10_000, `${where}: connectTimeoutMs`, issues);
    const callTimeoutMs = positive(server.callTimeoutMs, 60_000, `${where}: callTimeoutMs`, issues);
    checked.push({ config: server, connectTimeoutMs, callTimeoutMs, label });
  }
  if (issues.length > 0) throw new ConfigurationError(`the MCP server list is not valid: ${issues.join("; ")}`, issues);
  return checked;
}
