/**
 * The names of the Restate services one deployment of the engine registers. A `prefix` keeps
 * several engines (or test runs) apart on one Restate cluster.
 */
import { ConfigurationError } from "@durable-agents/core";

export interface ServiceNames {
  /** The virtual object that holds a session's state, inbox and events (keyed by session ID). */
  readonly session: string;
  /** The virtual object whose `drive` handler runs a session's steps (keyed by session ID). */
  readonly engine: string;
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
    engine: `${prefix}DurableSessionEngine`,
    watch: `${prefix}DurableSessionWatch`,
  };
}
