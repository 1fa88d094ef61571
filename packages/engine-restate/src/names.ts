/**
 * The names of the Restate services one deployment of the engine registers. A `prefix` keeps
 * several engines (or test runs) apart on one Restate cluster.
 */
import { ConfigurationError } from "@durable-agents/core";

export interface ServiceNames {
  /**
   * The virtual object (keyed by session ID) that holds a session's head, history and events, and
   * whose exclusive `drive` handler runs its steps and writes them.
   */
  readonly session: string;
  /** The virtual object (keyed by session ID) that holds a session's inbox and its long polls. */
  readonly inbox: string;
  /** The service whose `next` handler answers once a session's events or inbox move (a long poll). */
  readonly watch: string;
}

const prefixPattern = /^[A-Za-z][A-Za-z0-9_]{0,63}$/;

export function serviceNames(prefix = ""): ServiceNames {
  if (prefix !== "" && !prefixPattern.test(prefix)) {
    throw new ConfigurationError(
      `a service name prefix is a letter, then letters, digits or '_' (got ${JSON.stringify(prefix)})`,
      ["prefix"],
    );
  }
  return {
    session: `${prefix}DurableSession`,
    inbox: `${prefix}DurableSessionInbox`,
    watch: `${prefix}DurableSessionWatch`,
  };
}

/** The name of the signal that hands a running drive the inbox entry with this seq. */
export const entrySignal = (seq: number): string => `inbox:${seq}`;
