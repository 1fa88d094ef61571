/**
 * The terminal demo's own record of the sessions it started, in a small JSON file next to the
 * session store (`<name>.demo-sessions.json`): which conversation each one runs and whether it is
 * still open. The store has no "list sessions" call (nor should it need one for this), so the demo
 * keeps the IDs itself, the way an application keeps its users' session IDs. A session is recorded
 * before it is created, so a crash cannot leave a session the record does not know.
 *
 * Every change rewrites the file through a temporary file and a rename: a reader sees the old
 * record or the new one, never half of one.
 */
import { readFileSync, renameSync, writeFileSync } from "node:fs";
import { errorGuard, StoredStateError } from "@durable-agents/core";
import type { OrderSupportFramework } from "./order-support-framework.js";

export interface DemoSessionRecord {
  readonly sessionId: string;
  readonly framework: OrderSupportFramework;
  /** The conversation: one user message per turn. */
  readonly messages: readonly string[];
  readonly startedAt: string;
  /** `open` until every turn ended; `set_aside` when the user started a new session instead. */
  readonly state: "open" | "finished" | "set_aside";
}

/** A record file that is not one (or cannot be read): a `StoredStateError` of format `demo_sessions`. */
export class DemoSessionsFileError extends StoredStateError {
  constructor(message: string, options?: ErrorOptions) {
    super("demo_sessions", "malformed", undefined, message, options);
  }
  static override isInstance = errorGuard<DemoSessionsFileError>("stored_state", "DemoSessionsFileError");
}

/** How many sessions the file remembers; the oldest go first. */
const keep = 50;

export class DemoSessions {
  constructor(readonly path: string) {}

  /** Every recorded session, oldest first. */
  list(): DemoSessionRecord[] {
    let text: string;
    try {
      text = readFileSync(this.path, "utf8");
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code === "ENOENT") return [];
      throw new DemoSessionsFileError(`cannot read the demo's session list ${this.path}: ${(error as Error).message}`);
    }
    let parsed: unknown;
    try {
      parsed = JSON.parse(text);
    } catch {
      parsed = null;
    }
    const sessions = (parsed as { sessions?: unknown } | null)?.sessions;
    if (!Array.isArray(sessions) || !sessions.every(isRecord)) {
      throw new DemoSessionsFileError(`${this.path} is not the demo's session list; move it away or delete it`);
    }
    return sessions;
  }

  add(record: DemoSessionRecord): void {
    this.#write([...this.list(), record].slice(-keep));
  }

  setState(sessionId: string, state: DemoSessionRecord["state"]): void {
    const sessions = this.list();
    if (!sessions.some((s) => s.sessionId === sessionId && s.state !== state)) return;
    this.#write(sessions.map((s) => (s.sessionId === sessionId ? { ...s, state } : s)));
  }

  #write(sessions: readonly DemoSessionRecord[]): void {
    const temporary = `${this.path}.${process.pid}.tmp`;
    writeFileSync(temporary, `${JSON.stringify({ sessions }, null, 2)}\n`);
    renameSync(temporary, this.path);
  }
}

function isRecord(value: unknown): value is DemoSessionRecord {
  const record = value as Partial<DemoSessionRecord> | null;
  return (
    typeof record === "object" &&
    record !== null &&
    typeof record.sessionId === "string" &&
    typeof record.framework === "string" &&
    Array.isArray(record.messages) &&
    record.messages.every((m) => typeof m === "string") &&
    typeof record.startedAt === "string" &&
    (record.state === "open" || record.state === "finished" || record.state === "set_aside")
  );
}
