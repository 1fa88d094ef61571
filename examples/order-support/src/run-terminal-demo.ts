/**
 * Runs a conversation in the terminal: starts a session with the first message, follows its events
 * (rendered as compact progress), settles each approval with the given decider, sends the next
 * message when a turn ends, and prints each turn's answer.
 */
import { DurableAgentsError } from "@durable-agents/core";
import type { ApprovalDecider } from "./approval-deciders.js";
import type { ProgressRenderer } from "./progress-renderer.js";
import type { OrderSupportClient } from "./session-client-port.js";

export interface TerminalDemoOptions {
  readonly client: OrderSupportClient;
  readonly agent: string;
  /** The user messages, one turn each, in order. At least one. */
  readonly messages: readonly string[];
  readonly decide: ApprovalDecider;
  readonly renderer: ProgressRenderer;
  /** Aborts the demo (for example a timeout). */
  readonly signal?: AbortSignal;
}

export interface TerminalDemoResult {
  readonly sessionId: string;
  /** One entry per turn: its answer, or its failure. */
  readonly turns: readonly ({ readonly status: "completed"; readonly answer: string } | { readonly status: "failed"; readonly error: string })[];
}

export async function runTerminalDemo(options: TerminalDemoOptions): Promise<TerminalDemoResult> {
  const { client, renderer, messages } = options;
  const first = messages[0];
  if (first === undefined) throw new RangeError("the demo needs at least one message");
  const { sessionId } = await client.startSession({ agent: options.agent, message: first });
  renderer.line(`session ${sessionId}`);

  const turns: TerminalDemoResult["turns"][number][] = [];
  let next = 1;
  const follow = new AbortController();
  const stopFollowing = () => follow.abort();
  options.signal?.addEventListener("abort", stopFollowing, { once: true });
  try {
    for await (const event of client.followEvents(sessionId, { after: 0, signal: follow.signal })) {
      renderer.handle(event);
      if (event.type === "interrupt_created") {
        const interrupt = event.data.interrupt;
        renderer.settle();
        const decision = await options.decide(interrupt);
        renderer.line(`    ? ${interrupt.toolName} needs approval: ${decision.how}${decision.message ? ` ("${decision.message}")` : ""}`);
        try {
          await client.resolveInterrupt(sessionId, { interruptId: interrupt.interruptId, approved: decision.approved, message: decision.message });
        } catch (error) {
          // Someone else (another client of the same store) may have decided first.
          if (!DurableAgentsError.isInstance(error) || error.code !== "duplicate_resolution") throw error;
          renderer.line(`    (already decided elsewhere)`);
        }
      } else if (event.type === "turn_completed" || event.type === "turn_failed") {
        if (event.type === "turn_completed") {
          turns.push({ status: "completed", answer: event.data.text });
          renderer.line(`  ◆ answer: ${event.data.text}`);
        } else {
          turns.push({ status: "failed", error: event.data.error });
        }
        const message = messages[next];
        if (message === undefined) break;
        next += 1;
        await client.sendMessage(sessionId, message);
      }
    }
  } finally {
    options.signal?.removeEventListener("abort", stopFollowing);
    follow.abort();
  }
  if (turns.length < messages.length) {
    throw new Error(`the demo stopped after ${turns.length} of ${messages.length} turns${options.signal?.aborted ? " (aborted)" : ""}`);
  }
  return { sessionId, turns };
}
