/**
 * A small Server-Sent Events reader over a fetch body: each message's `id` (the field of that
 * message, not the inherited last ID) and its `data`. Comments and `retry:` are skipped.
 */

export interface SseMessage {
  /** The message's own `id:` field, or null when it has none. */
  readonly id: string | null;
  readonly event: string | null;
  readonly data: string;
}

export async function* readSseMessages(body: ReadableStream<Uint8Array>): AsyncGenerator<SseMessage> {
  const reader = body.pipeThrough(new TextDecoderStream()).getReader();
  let buffer = "";
  let id: string | null = null;
  let event: string | null = null;
  let data: string[] = [];
  let sawField = false;
  try {
    for (;;) {
      const { done, value } = await reader.read();
      if (done) return;
      buffer += value;
      for (;;) {
        const newline = buffer.search(/\r\n|\r|\n/);
        if (newline < 0) break;
        const line = buffer.slice(0, newline);
        buffer = buffer.slice(newline + (buffer.startsWith("\r\n", newline) ? 2 : 1));
        if (line === "") {
          if (sawField && data.length > 0) yield { id, event, data: data.join("\n") };
          id = null;
          event = null;
          data = [];
          sawField = false;
          continue;
        }
        if (line.startsWith(":")) continue;
        const colon = line.indexOf(":");
        const field = colon < 0 ? line : line.slice(0, colon);
        let value = colon < 0 ? "" : line.slice(colon + 1);
        if (value.startsWith(" ")) value = value.slice(1);
        sawField = true;
        if (field === "data") data.push(value);
        else if (field === "id") id = value;
        else if (field === "event") event = value;
      }
    }
  } finally {
    // Returned early (the consumer stopped) or done: either way the body is not read any further.
    await reader.cancel().catch(() => {});
  }
}
