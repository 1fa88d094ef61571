/** The `occurredAt` a held transition's events carry (core stamps the events that time a turn or a step). */

interface TypedEvent {
  readonly type: string;
  readonly data: unknown;
}

const occurredAtOf = (event: TypedEvent): unknown => (event.data as { occurredAt?: unknown }).occurredAt;

/** The events without their `occurredAt`: what a commit that held nothing would have stored. */
export function withoutOccurredAt<E extends TypedEvent>(events: readonly E[]): E[] {
  return events.map((event) => {
    if (occurredAtOf(event) === undefined) return event;
    const { occurredAt: _, ...data } = event.data as Record<string, unknown>;
    return { ...event, data };
  });
}

/** The types of the events that carry an `occurredAt`, in order. */
export function stamped(events: readonly TypedEvent[]): string[] {
  return events.filter((event) => typeof occurredAtOf(event) === "string").map((event) => event.type);
}
