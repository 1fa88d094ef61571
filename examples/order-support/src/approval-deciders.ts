/**
 * Who decides an approval in the terminal demo: a person at a TTY (readline), or a fixed answer
 * (`--yes`, `--reject "<message>"`, or stdin that is not a TTY). With `--ask` the person's answers
 * may come from stdin that is not a TTY (a pipe), one line per question.
 */
import { createInterface } from "node:readline/promises";
import type { Interrupt } from "@durable-agents/core";

export interface ApprovalDecision {
  readonly approved: boolean;
  /** For a rejection: what the model is told. */
  readonly message: string | null;
  /** How the decision was made, for the demo's output. */
  readonly how: string;
}

/** `signal` aborts a question still waiting for its answer (Ctrl-C, a timeout). */
export type ApprovalDecider = (interrupt: Interrupt, signal?: AbortSignal) => Promise<ApprovalDecision>;

export function approveAutomatically(how: string): ApprovalDecider {
  return async () => ({ approved: true, message: null, how });
}

/** `message`: what the model is told; null leaves the engine's default rejection text. */
export function rejectAutomatically(message: string | null, how: string): ApprovalDecider {
  return async () => ({ approved: false, message, how });
}

/** Asks on the terminal: approve (y) or reject (n, then an optional message for the model). */
export function askOnTerminal(input: NodeJS.ReadableStream, output: NodeJS.WritableStream): ApprovalDecider {
  return async (interrupt, signal) => {
    for (;;) {
      const answer = (
        await ask(input, output, `  ? Approve ${interrupt.toolName} ${interrupt.arguments}? [y/n] `, signal)
      )
        .trim()
        .toLowerCase();
      if (answer === "y" || answer === "yes") return { approved: true, message: null, how: "approved at the terminal" };
      if (answer === "n" || answer === "no") {
        const why = (await ask(input, output, "    Message for the agent (optional): ", signal)).trim();
        return { approved: false, message: why === "" ? null : why, how: "rejected at the terminal" };
      }
    }
  };
}

/** A yes/no question on the terminal; an empty answer is `defaultYes`. */
export async function askYesNo(
  input: NodeJS.ReadableStream,
  output: NodeJS.WritableStream,
  question: string,
  defaultYes: boolean,
  signal?: AbortSignal,
): Promise<boolean> {
  for (;;) {
    const answer = (await ask(input, output, `${question} ${defaultYes ? "[Y/n]" : "[y/N]"} `, signal))
      .trim()
      .toLowerCase();
    if (answer === "") return defaultYes;
    if (answer === "y" || answer === "yes") return true;
    if (answer === "n" || answer === "no") return false;
  }
}

/**
 * One question, one line of answer. At a TTY each question has its own readline, and Ctrl-C (which
 * readline reads as a key, not a signal) becomes a real SIGINT to this process, so the demo stops
 * the same way wherever it is. From a pipe, one reader per stream queues the lines, so answers
 * written ahead of their questions are not lost; the answer is echoed after the question.
 */
async function ask(
  input: NodeJS.ReadableStream,
  output: NodeJS.WritableStream,
  question: string,
  signal?: AbortSignal,
): Promise<string> {
  signal?.throwIfAborted();
  if ((input as { isTTY?: boolean }).isTTY !== true) {
    output.write(question);
    const answer = await pipedLines(input).next(signal);
    output.write(`${answer}\n`);
    return answer;
  }
  const rl = createInterface({ input, output, terminal: true });
  rl.on("SIGINT", () => process.kill(process.pid, "SIGINT"));
  try {
    return await rl.question(question, signal ? { signal } : {});
  } finally {
    rl.close();
  }
}

/** The lines of a stream that is not a TTY, one reader per stream for the whole process. */
class PipedLines {
  readonly #lines: string[] = [];
  readonly #waiting: { resolve(line: string): void; reject(error: Error): void }[] = [];
  #closed = false;

  constructor(input: NodeJS.ReadableStream) {
    const rl = createInterface({ input, terminal: false });
    rl.on("line", (line) => {
      const waiter = this.#waiting.shift();
      if (waiter) waiter.resolve(line);
      else this.#lines.push(line);
    });
    rl.on("close", () => {
      this.#closed = true;
      for (const waiter of this.#waiting.splice(0))
        waiter.reject(new Error("stdin ended before the question was answered"));
    });
  }

  next(signal?: AbortSignal): Promise<string> {
    const line = this.#lines.shift();
    if (line !== undefined) return Promise.resolve(line);
    if (this.#closed) return Promise.reject(new Error("stdin ended before the question was answered"));
    return new Promise((resolve, reject) => {
      const waiter = {
        resolve: (value: string) => {
          signal?.removeEventListener("abort", onAbort);
          resolve(value);
        },
        reject: (error: Error) => {
          signal?.removeEventListener("abort", onAbort);
          reject(error);
        },
      };
      const onAbort = () => {
        const at = this.#waiting.indexOf(waiter);
        if (at !== -1) this.#waiting.splice(at, 1);
        reject(signal?.reason instanceof Error ? signal.reason : new Error("aborted"));
      };
      signal?.addEventListener("abort", onAbort, { once: true });
      this.#waiting.push(waiter);
    });
  }
}

const pipes = new WeakMap<NodeJS.ReadableStream, PipedLines>();

function pipedLines(input: NodeJS.ReadableStream): PipedLines {
  const lines = pipes.get(input) ?? new PipedLines(input);
  pipes.set(input, lines);
  return lines;
}
