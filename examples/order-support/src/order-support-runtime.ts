/**
 * Everything one process needs to run order support sessions: a store (the in-memory store unless
 * one is given), the order desk, the session definition, a worker that drives the sessions and a
 * client. Every process that starts sessions builds the same definition.
 */
import type { Model } from "@openai/agents";
import { SessionClient, Worker, type SessionDefinition, type SessionStore } from "@durable-agents/core";
import { MemoryStore } from "@durable-agents/store-memory";
import { OrderDesk } from "./order-desk.js";
import { createOrderSupportSession, orderSupportAgentName } from "./order-support-session.js";

export interface OrderSupportRuntimeOptions {
  /** Default: a new `MemoryStore`, closed by `stop()`. */
  readonly store?: SessionStore;
  readonly desk?: OrderDesk;
  readonly model: Model | string;
  /** Passed to the worker. */
  readonly leaseTtlMs?: number;
}

export interface OrderSupportRuntime {
  readonly store: SessionStore;
  readonly desk: OrderDesk;
  readonly definition: SessionDefinition;
  readonly client: SessionClient;
  readonly worker: Worker;
  /** Stops the worker (steps in flight finish), then closes a store this runtime made. */
  stop(): Promise<void>;
}

export function startOrderSupportRuntime(options: OrderSupportRuntimeOptions): OrderSupportRuntime {
  const ownStore = options.store === undefined;
  const store = options.store ?? new MemoryStore();
  const desk = options.desk ?? new OrderDesk();
  const definition = createOrderSupportSession(desk, options.model);
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
        await worker.stop();
        if (ownStore) await store.close();
      })();
      return stopped;
    },
  };
}
