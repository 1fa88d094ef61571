/**
 * Everything one process needs to run order support sessions: a store (the in-memory store unless
 * one is given; `openOrderSupportStore` opens the SQLite one with its desk), the order desk, the session definition, a worker that drives the sessions and a
 * client. Every process that starts sessions builds the same definition.
 */
import type { Model } from "@openai/agents";
import {
  ConfigurationError,
  SessionClient,
  Worker,
  type SessionDefinition,
  type SessionStore,
} from "@durable-agents/core";
import type { McpToolset } from "@durable-agents/mcp";
import { MemoryStore } from "@durable-agents/store-memory";
import { OrderDesk } from "./order-desk.js";
import { createOrderSupportSession, orderSupportAgentName } from "./order-support-session.js";

interface RuntimeBaseOptions {
  /** Default: a new `MemoryStore`, closed by `stop()`. */
  readonly store?: SessionStore;
  readonly desk?: OrderDesk;
  /** Passed to the worker. */
  readonly leaseTtlMs?: number;
  /** The warehouse's MCP tools for the agent (`connectWarehouse()`); the caller closes it after `stop()`. */
  readonly warehouse?: McpToolset;
}

/** What a session definition is built with, besides the desk. */
export interface OrderSupportSessionContext {
  /**
   * Aborted by `stop()` before the worker stops: tools that wait (the slow look-up) stop waiting, so
   * that no step is still in flight when the worker stops.
   */
  readonly stopping: AbortSignal;
  /** The warehouse's MCP tools, when the runtime was given them. */
  readonly warehouse?: McpToolset;
}

/**
 * Either `model`: the Agents SDK session on that model; or `session`: builds the definition over the
 * desk (any framework, for example `orderSupportSetupFromEnv(...).createSession`).
 */
export type OrderSupportRuntimeOptions = RuntimeBaseOptions &
  (
    | { readonly model: Model | string; readonly session?: undefined }
    | {
        readonly session: (desk: OrderDesk, context: OrderSupportSessionContext) => SessionDefinition;
        readonly model?: undefined;
      }
  );

export interface OrderSupportRuntime {
  readonly store: SessionStore;
  readonly desk: OrderDesk;
  readonly definition: SessionDefinition;
  readonly client: SessionClient;
  readonly worker: Worker;
  /**
   * Stops waiting tools (see `OrderSupportSessionContext`), then the worker (steps in flight
   * finish), then closes a store this runtime made.
   */
  stop(): Promise<void>;
}

export function startOrderSupportRuntime(options: OrderSupportRuntimeOptions): OrderSupportRuntime {
  const ownStore = options.store === undefined;
  const store = options.store ?? new MemoryStore();
  const desk = options.desk ?? new OrderDesk();
  const stopping = new AbortController();
  const context: OrderSupportSessionContext = {
    stopping: stopping.signal,
    ...(options.warehouse ? { warehouse: options.warehouse } : {}),
  };
  const definition =
    options.session !== undefined
      ? options.session(desk, context)
      : createOrderSupportSession(desk, options.model, { stopping: stopping.signal }, options.warehouse);
  if (definition.name !== orderSupportAgentName) {
    throw new ConfigurationError(
      `the order support session must be named "${orderSupportAgentName}", not "${definition.name}"`,
    );
  }
  const client = new SessionClient({ store, agents: [orderSupportAgentName] });
  const worker = new Worker({
    store,
    sessions: [definition],
    ...(options.leaseTtlMs === undefined ? {} : { leaseTtlMs: options.leaseTtlMs }),
  });
  worker.start();
  let stopped: Promise<void> | null = null;
  return {
    store,
    desk,
    definition,
    client,
    worker,
    stop() {
      stopped ??= (async () => {
        // Core's Worker.stop() waits for the steps in flight: a look-up still waiting (up to its whole
        // delay) is stopped first.
        stopping.abort(new Error("the process is stopping"));
        await worker.stop();
        if (ownStore) await store.close();
      })();
      return stopped;
    },
  };
}
