/**
 * One MCP server's connection: the handshake, the tool list (read at connect, after every
 * `notifications/tools/list_changed`, and after every reconnect), tool calls, and reconnecting for
 * the next call once the connection is lost.
 */
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
import { StreamableHTTPClientTransport, StreamableHTTPError } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import {
  CallToolResultSchema,
  ToolListChangedNotificationSchema,
  type CallToolResult,
  type Tool,
} from "@modelcontextprotocol/sdk/types.js";
import { McpConnectionError, errorText } from "./errors.js";
import { isStdio, type CheckedServer, type McpHttpServer, type McpStdioServer } from "./server-config.js";

const clientInfo = { name: "durable-agents", version: "0.1.0" };

/** Errors the Streamable HTTP transport reports when a response stream broke (the server died or the network dropped). */
const streamBroken = (error: unknown): boolean =>
  error instanceof Error &&
  /SSE stream disconnected|Failed to reconnect SSE stream|Maximum reconnection attempts/.test(error.message);

/** The server answered 404: it does not know the session (it restarted), so the request did not run. */
const sessionUnknown = (error: unknown): boolean => error instanceof StreamableHTTPError && error.code === 404;

const withTimeout = <T>(promise: Promise<T>, ms: number, what: string): Promise<T> => {
  let timer: ReturnType<typeof setTimeout> | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`${what} took longer than ${ms} ms`)), ms);
  });
  return Promise.race([promise, timeout]).finally(() => clearTimeout(timer));
};

export interface ConnectionEvents {
  /** The server's tool list, as read after connecting or after the server said it changed. */
  readonly tools: (server: string, tools: readonly Tool[]) => void;
  /** Something went wrong outside a call (a refresh of the tool list failed). */
  readonly error: (error: unknown) => void;
}

export class ServerConnection {
  readonly name: string;
  #client: Client | null = null;
  #transport: StdioClientTransport | StreamableHTTPClientTransport | null = null;
  #opening: Promise<Client> | null = null;
  #closed = false;
  /** Tool list refreshes: one runs at a time, and a notification during one makes it run once more. */
  #refreshing: Promise<void> | null = null;
  #refreshAgain = false;

  constructor(
    readonly server: CheckedServer,
    private readonly events: ConnectionEvents,
  ) {
    this.name = server.config.name;
  }

  /** The connected client, connecting first when there is none (at start, or after the connection was lost). */
  open(): Promise<Client> {
    if (this.#closed)
      return Promise.reject(new McpConnectionError(this.name, `the MCP server "${this.name}" was closed`));
    if (this.#client) return Promise.resolve(this.#client);
    this.#opening ??= this.#connect().finally(() => {
      this.#opening = null;
    });
    return this.#opening;
  }

  get connected(): boolean {
    return this.#client !== null;
  }

  /** The process ID of a stdio server while it runs (null for HTTP, or when not connected). */
  get pid(): number | null {
    return this.#transport instanceof StdioClientTransport ? this.#transport.pid : null;
  }

  async #connect(): Promise<Client> {
    const { config, connectTimeoutMs, label } = this.server;
    const client = new Client(clientInfo, { capabilities: {} });
    const transport = isStdio(config) ? stdioTransport(config) : httpTransport(config);
    client.onclose = () => {
      if (this.#client === client) {
        this.#client = null;
        this.#transport = null;
      }
    };
    client.onerror = (error) => {
      // A broken response stream leaves its request waiting forever: close, so that every call in
      // flight fails now and the next call reconnects.
      if (streamBroken(error)) void client.close().catch(() => {});
    };
    client.setNotificationHandler(ToolListChangedNotificationSchema, () => {
      if (this.#client === client) this.#refresh(client);
    });
    let tools: Tool[];
    try {
      await withTimeout(client.connect(transport, { timeout: connectTimeoutMs }), connectTimeoutMs, "the handshake");
      tools = await withTimeout(this.#list(client), connectTimeoutMs, "reading the tool list");
    } catch (error) {
      await client.close().catch(() => {});
      throw new McpConnectionError(
        this.name,
        `cannot connect to the MCP server "${this.name}" (${label}): ${errorText(error)}`,
        { cause: error },
      );
    }
    if (this.#closed) {
      await client.close().catch(() => {});
      throw new McpConnectionError(this.name, `the MCP server "${this.name}" was closed`);
    }
    this.#client = client;
    this.#transport = transport;
    this.events.tools(this.name, tools);
    return client;
  }

  async #list(client: Client): Promise<Tool[]> {
    if (!client.getServerCapabilities()?.tools) return [];
    const tools: Tool[] = [];
    let cursor: string | undefined;
    do {
      const page = await client.listTools(cursor === undefined ? {} : { cursor }, {
        timeout: this.server.connectTimeoutMs,
      });
      tools.push(...page.tools);
      cursor = page.nextCursor;
    } while (cursor !== undefined);
    return tools;
  }

  /** Reads the tool list again (the server said it changed). */
  #refresh(client: Client): void {
    if (this.#refreshing) {
      this.#refreshAgain = true;
      return;
    }
    this.#refreshing = (async () => {
      do {
        this.#refreshAgain = false;
        try {
          const tools = await this.#list(client);
          if (this.#client === client) this.events.tools(this.name, tools);
        } catch (error) {
          if (this.#client === client)
            this.events.error(
              new McpConnectionError(
                this.name,
                `the MCP server "${this.name}" said its tools changed, but reading them failed: ${errorText(error)}`,
                { cause: error },
              ),
            );
        }
      } while (this.#refreshAgain && this.#client === client);
    })().finally(() => {
      this.#refreshing = null;
    });
  }

  /** Waits for a tool list refresh that is running, if any (tests and the toolset's `refreshed()`). */
  async settled(): Promise<void> {
    while (this.#refreshing) await this.#refreshing;
  }

  /**
   * One `tools/call` request. Throws what the SDK throws (the connection closed, a timeout, a
   * JSON-RPC error of the server, the abort of `signal`); a server that forgot the session (HTTP 404)
   * did not run the call, so it is sent once more on a new connection.
   */
  async callTool(
    name: string,
    args: Record<string, unknown>,
    meta: Record<string, unknown>,
    signal: AbortSignal | undefined,
  ): Promise<CallToolResult> {
    const send = (client: Client) =>
      client.request({ method: "tools/call", params: { name, arguments: args, _meta: meta } }, CallToolResultSchema, {
        timeout: this.server.callTimeoutMs,
        // A progress notification keeps a long call alive (the SDK then adds a progressToken to _meta).
        onprogress: () => {},
        resetTimeoutOnProgress: true,
        ...(signal ? { signal } : {}),
      }) as Promise<CallToolResult>;
    const client = await this.open();
    try {
      return await send(client);
    } catch (error) {
      if (!sessionUnknown(error) || signal?.aborted) throw error;
      await this.#drop(client);
      return await send(await this.open());
    }
  }

  async #drop(client: Client): Promise<void> {
    if (this.#client === client) {
      this.#client = null;
      this.#transport = null;
    }
    await client.close().catch(() => {});
  }

  async close(): Promise<void> {
    this.#closed = true;
    const opening = this.#opening;
    if (opening) await opening.catch(() => {});
    const client = this.#client;
    const transport = this.#transport;
    this.#client = null;
    this.#transport = null;
    if (!client) return;
    if (transport instanceof StreamableHTTPClientTransport) {
      await withTimeout(transport.terminateSession(), 2_000, "ending the session").catch(() => {});
    }
    await client.close().catch(() => {});
  }
}

function stdioTransport(config: McpStdioServer): StdioClientTransport {
  return new StdioClientTransport({
    command: config.command,
    args: [...(config.args ?? [])],
    ...(config.env ? { env: { ...config.env } } : {}),
    ...(config.cwd ? { cwd: config.cwd } : {}),
    stderr: config.stderr ?? "inherit",
  });
}

function httpTransport(config: McpHttpServer): StreamableHTTPClientTransport {
  return new StreamableHTTPClientTransport(new URL(String(config.url)), {
    ...(config.headers ? { requestInit: { headers: { ...config.headers } } } : {}),
    // The server's standalone event stream (tool list changes) is opened again after a drop; a
    // server that is gone is noticed by the failed reconnect and the connection is closed.
    reconnectionOptions: {
      initialReconnectionDelay: 200,
      maxReconnectionDelay: 2_000,
      reconnectionDelayGrowFactor: 2,
      maxRetries: 2,
    },
  });
}
