/**
 * A small Server-Sent Events reader over fetch streaming, for tests: it parses frames as the SSE
 * spec says (fields, comments, multi-line data, CR/LF/CRLF line ends) and can be dropped at any
 * point, like a browser losing its connection.
 */
export interface SseMessage {
  readonly id: string | null;
  readonly event: string;
  readonly data: string;
}

export class SseConnection {
  readonly #abort: AbortController;
  readonly #reader: ReadableStreamDefaultReader<Uint8Array>;
  readonly #decoder = new TextDecoder();
  readonly #ready: SseMessage[] = [];
  #buffer = "";
  #data: string[] = [];
  #event = "";
  #id: string | null = null;
  #ended = false;

  private constructor(abort: AbortController, reader: ReadableStreamDefaultReader<Uint8Array>) {
    this.#abort = abort;
    this.#reader = reader;
  }

  /** Opens the stream; throws with the status and body when the answer is not a 200 event stream. */
  static async open(url: string, headers: Record<string, string> = {}): Promise<SseConnection> {
    const abort = new AbortController();
    const response = await fetch(url, { headers: { accept: "text/event-stream", ...headers }, signal: abort.signal });
    if (
      response.status !== 200 ||
      !response.headers.get("content-type")?.startsWith("text/event-stream") ||
      !response.body
    ) {
      const body = await response.text().catch(() => "");
      abort.abort();
      throw new Error(`expected an event stream, got ${response.status}: ${body}`);
    }
    return new SseConnection(abort, response.body.getReader());
  }

  /** The next message, or null when the server ended the stream. Throws after `timeoutMs`. */
  async next(timeoutMs = 10_000): Promise<SseMessage | null> {
    const deadline = Date.now() + timeoutMs;
    while (this.#ready.length === 0) {
      if (this.#ended) return null;
      let timer: NodeJS.Timeout | undefined;
      const timeout = new Promise<never>((_, reject) => {
        timer = setTimeout(
          () => reject(new Error(`no SSE message within ${timeoutMs} ms`)),
          Math.max(0, deadline - Date.now()),
        );
      });
      try {
        const chunk = await Promise.race([this.#reader.read(), timeout]);
        if (chunk.done) {
          this.#ended = true;
          this.#feed(this.#decoder.decode(), true);
        } else {
          this.#feed(this.#decoder.decode(chunk.value, { stream: true }), false);
        }
      } finally {
        clearTimeout(timer);
      }
    }
    return this.#ready.shift() ?? null;
  }

  /** Drops the connection without reading the rest. */
  close(): void {
    this.#abort.abort();
    this.#reader.cancel().catch(() => {});
  }

  #feed(text: string, final: boolean): void {
    this.#buffer += text;
    for (;;) {
      const match = /\r\n|\n|\r/.exec(this.#buffer);
      // A lone CR at the end may be the first half of a CRLF: wait for more input.
      if (!match || (match[0] === "\r" && match.index === this.#buffer.length - 1 && !final)) break;
      const line = this.#buffer.slice(0, match.index);
      this.#buffer = this.#buffer.slice(match.index + match[0].length);
      this.#line(line);
    }
  }

  #line(line: string): void {
    if (line === "") {
      if (this.#data.length > 0)
        this.#ready.push({ id: this.#id, event: this.#event || "message", data: this.#data.join("\n") });
      this.#data = [];
      this.#event = "";
      return;
    }
    if (line.startsWith(":")) return;
    const colon = line.indexOf(":");
    const field = colon === -1 ? line : line.slice(0, colon);
    let value = colon === -1 ? "" : line.slice(colon + 1);
    if (value.startsWith(" ")) value = value.slice(1);
    if (field === "data") this.#data.push(value);
    else if (field === "event") this.#event = value;
    else if (field === "id" && !value.includes("\u0000")) this.#id = value;
  }
}
