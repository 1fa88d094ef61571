/**
 * Who decides an approval in the terminal demo: a person at a TTY (readline), or a fixed answer
 * (`--yes`, `--reject "<message>"`, or stdin that is not a TTY).
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

export type ApprovalDecider = (interrupt: Interrupt) => Promise<ApprovalDecision>;

export function approveAutomatically(how: string): ApprovalDecider {
  return async () => ({ approved: true, message: null, how });
}

/** `message`: what the model is told; null leaves the engine's default rejection text. */
export function rejectAutomatically(message: string | null, how: string): ApprovalDecider {
  return async () => ({ approved: false, message, how });
}

/** Asks on the terminal: approve (y) or reject (n, then an optional message for the model). */
export function askOnTerminal(input: NodeJS.ReadableStream, output: NodeJS.WritableStream): ApprovalDecider {
  return async (interrupt) => {
    const rl = createInterface({ input, output, terminal: true });
    try {
      for (;;) {
        const answer = (await rl.question(`  ? Approve ${interrupt.toolName} ${interrupt.arguments}? [y/n] `)).trim().toLowerCase();
        if (answer === "y" || answer === "yes") return { approved: true, message: null, how: "approved at the terminal" };
        if (answer === "n" || answer === "no") {
          const why = (await rl.question("    Message for the agent (optional): ")).trim();
          return { approved: false, message: why === "" ? null : why, how: "rejected at the terminal" };
        }
      }
    } finally {
      rl.close();
    }
  };
}
