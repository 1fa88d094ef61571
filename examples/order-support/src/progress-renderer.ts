/**
 * A compact terminal view of a session's events: one line per step with a status mark, the model's
 * text streamed under its RunModel step, and what each step produced (the calls the model asked
 * for, a call's outcome) on the step's own line.
 *
 * On a TTY (`live`), a running step's line is written at once and rewritten in place with its mark
 * when it ends. Otherwise a step's line is written when it ends, unless something has to be printed
 * while it runs (streamed text, a prompt), in which case a "running" line comes first.
 *
 * A cancelled turn ends with its receipt: every call of the turn with its effect, final status and
 * attempts, as core's `turn_cancelled` event lists them.
 */
import type { SessionEvent, StepKind } from "@durable-agents/core";

export interface ProgressOutput {
  write(text: string): void;
}

export interface ProgressRendererOptions {
  /** Rewrite lines in place (for a TTY). Default false. */
  readonly live?: boolean;
  /** ANSI colours. Default: same as `live`. */
  readonly color?: boolean;
  /**
   * Terminal width. In live mode a running step's line is cut to fit, since a wrapped line could
   * not be rewritten in place.
   */
  readonly columns?: number;
}

interface RunningStep {
  readonly label: string;
  readonly startedAt: number;
}

/** The line of a step that just ended, written without its newline so that what it produced can follow. */
interface OpenTail {
  readonly turnId: string;
  readonly step: StepKind;
  readonly toolCallId: string | undefined;
}

const maxShown = 100;

export class ProgressRenderer {
  readonly #out: ProgressOutput;
  /** While set (during `replay`), nothing is written. */
  #muted = false;
  readonly #live: boolean;
  readonly #color: boolean;
  readonly #columns: number | undefined;
  readonly #running = new Map<string, RunningStep>();
  readonly #calls = new Map<string, string>();
  /** The step whose start line is pending: written without a newline (live) or not written yet. */
  #pending: string | null = null;
  /** Streamed text was written and its line is not ended yet. */
  #inText = false;
  #tail: OpenTail | null = null;

  constructor(out: ProgressOutput, options: ProgressRendererOptions = {}) {
    this.#out = { write: (text) => (this.#muted ? undefined : out.write(text)) };
    this.#live = options.live ?? false;
    this.#color = options.color ?? this.#live;
    this.#columns = options.columns;
  }

  handle(event: SessionEvent): void {
    switch (event.type) {
      case "turn_started":
        this.line(`${this.#paint("1", "›")} ${event.data.text}`);
        break;
      case "step_started":
        this.#stepStarted(
          event.data.turnId,
          event.data.step,
          event.data.toolCallId,
          event.data.attempt,
          // A start stored with a later commit (held for the step's result) says when it happened.
          Date.parse(event.data.occurredAt ?? event.at),
        );
        break;
      case "step_completed":
        this.#stepCompleted(event, Date.parse(event.data.occurredAt ?? event.at));
        break;
      case "text_delta":
        this.#text(event.data.text);
        break;
      case "tool_calls_requested": {
        for (const call of event.data.calls)
          this.#calls.set(call.toolCallId, `${call.name} ${shorten(call.arguments, 60)}`);
        const asked = event.data.calls.map((call) => this.#calls.get(call.toolCallId)).join(", ");
        if (this.#tail?.step === "RunModel" && this.#tail.turnId === event.data.turnId) this.#out.write(`  → ${asked}`);
        else this.line(`    ${this.#paint("2", "↳")} asks for ${asked}`);
        break;
      }
      case "tool_call_completed": {
        const text = shorten(event.data.text, maxShown);
        if (this.#tail !== null && this.#tail.toolCallId === event.data.toolCallId) {
          this.#out.write(` ${this.#paint("2", `→ ${text}`)}`);
        } else {
          this.line(
            `    ${this.#paint(event.data.status === "succeeded" ? "32" : "33", "↳")} ${event.data.name} ${event.data.status}: ${text}`,
          );
        }
        break;
      }
      case "turn_failed":
        this.line(`  ${this.#paint("31", "✗")} turn failed: ${event.data.error}`);
        break;
      case "turn_cancelling": {
        const waitMs = Math.max(0, Date.parse(event.data.graceUntil) - Date.parse(event.at));
        const calls = event.data.running.map((id) => this.#calls.get(id) ?? id).join(", ");
        this.line(
          `  ${this.#paint("33", "■")} cancelling: waiting up to ${formatSeconds(waitMs)} for ${calls} to stop`,
        );
        break;
      }
      case "turn_cancelled":
        this.#receipt(event.data);
        break;
      case "cancel_skipped":
        this.line(`  ${this.#paint("33", "■")} nothing was cancelled: ${event.data.why}`);
        break;
      case "message_steered":
        this.line(`  ${this.#paint("1", "+")} joins the turn: ${event.data.text}`);
        break;
      case "session_recovered":
        this.line(`  ${this.#paint("33", "!")} a worker took over the session (lease ${event.data.fence})`);
        break;
      case "call_reconciled": {
        const label = this.#calls.get(event.data.toolCallId) ?? event.data.name;
        const found = { done: "it took effect", not_done: "it did not take effect", unknown: "it cannot tell" }[
          event.data.found
        ];
        const then =
          event.data.status === "succeeded"
            ? "succeeded, not run again"
            : event.data.status === "awaiting_approval"
              ? "offered for approval again"
              : event.data.status === "pending"
                ? "runs again with the same key"
                : event.data.status;
        this.line(`  ${this.#paint("36", "⟲")} reconciled ${label}: the check says ${found}; ${then}`);
        break;
      }
      case "attention_required": {
        const { interrupt } = event.data;
        const label = this.#calls.get(interrupt.toolCallId) ?? interrupt.toolName;
        this.line(
          `  ${this.#paint("33", "!")} needs attention: the outcome of ${label} is unknown; a person must check it (${interrupt.interruptId})`,
        );
        break;
      }
      case "attention_resolved":
        this.line(`  ${this.#paint("36", "!")} attention ${event.data.interruptId} resolved: ${event.data.outcome}`);
        break;
      default:
        break;
    }
  }

  /**
   * Takes in events that were shown before (by an earlier process, for a resumed session) without
   * writing anything, so that what follows them renders as if they had been: a step that started
   * before ends with its own label and duration.
   */
  replay(events: Iterable<SessionEvent>): void {
    this.#muted = true;
    try {
      for (const event of events) this.handle(event);
      this.settle();
    } finally {
      this.#muted = false;
    }
  }

  /** Prints a whole line, after ending any open line. */
  line(text: string): void {
    this.settle();
    this.#out.write(`${text}\n`);
  }

  /** Ends any open line (streamed text, a step line), so that a prompt or another line starts fresh. */
  settle(): void {
    if (this.#tail !== null) {
      this.#out.write("\n");
      this.#tail = null;
    }
    if (this.#inText) {
      this.#out.write("\n");
      this.#inText = false;
    }
    if (this.#pending !== null) {
      const step = this.#running.get(this.#pending);
      if (this.#live) this.#out.write("\n");
      else if (step) this.#out.write(`  ${this.#paint("36", "▸")} ${step.label}\n`);
      this.#pending = null;
    }
  }

  #receipt(receipt: Extract<SessionEvent, { type: "turn_cancelled" }>["data"]): void {
    const why = receipt.reason === null ? "" : ` (${receipt.reason})`;
    const model = receipt.modelCallAborted ? "; the model call in flight was stopped" : "";
    this.line(`  ${this.#paint("33", "■")} turn cancelled${why}${model}`);
    const count = receipt.calls.length;
    this.line(`    receipt: ${count === 0 ? "no tool call" : `${count} tool call${count === 1 ? "" : "s"}`}`);
    for (const call of receipt.calls) {
      const label = this.#calls.get(call.toolCallId) ?? call.name;
      const attempts = `${call.attempts} attempt${call.attempts === 1 ? "" : "s"}`;
      const status = this.#paint(call.status === "succeeded" ? "32" : "33", call.status);
      this.line(`      ${label} (${call.effect}): ${status}, ${attempts}`);
    }
  }

  #stepStarted(turnId: string, step: StepKind, toolCallId: string | undefined, attempt: number, at: number): void {
    this.settle();
    const key = stepKey(turnId, step, toolCallId);
    const call = toolCallId ? this.#calls.get(toolCallId) : undefined;
    const label = `${step}${call ? ` ${call}` : ""}${attempt > 1 ? ` (attempt ${attempt})` : ""}`;
    this.#running.set(key, { label, startedAt: at });
    this.#pending = key;
    if (this.#live) {
      const room = this.#columns === undefined ? Infinity : Math.max(10, this.#columns - 5);
      this.#out.write(`  ${this.#paint("36", "▸")} ${label.length > room ? `${label.slice(0, room - 1)}…` : label}`);
    }
  }

  #stepCompleted(event: Extract<SessionEvent, { type: "step_completed" }>, at: number): void {
    const { turnId, step, toolCallId, status, detail } = event.data;
    const key = stepKey(turnId, step, toolCallId);
    const running = this.#running.get(key);
    this.#running.delete(key);
    const mark = status === "completed" ? this.#paint("32", "✓") : this.#paint("31", "✗");
    let text = `  ${mark} ${running?.label ?? step}`;
    if (detail) text += `  ${status === "failed" ? detail : this.#paint("2", shorten(detail, maxShown))}`;
    if (running && Number.isFinite(at - running.startedAt))
      text += `  ${this.#paint("2", `(${Math.max(0, at - running.startedAt)} ms)`)}`;
    if (this.#pending === key && !this.#inText && this.#tail === null) {
      this.#pending = null;
      this.#out.write(this.#live ? `\r\x1b[2K${text}` : text);
    } else {
      this.settle();
      this.#out.write(text);
    }
    this.#tail = { turnId, step, toolCallId };
  }

  #text(text: string): void {
    if (!this.#inText) {
      this.settle();
      this.#out.write("    ");
      this.#inText = true;
    }
    this.#out.write(text.replace(/\n/g, "\n    "));
  }

  #paint(code: string, text: string): string {
    return this.#color ? `\x1b[${code}m${text}\x1b[0m` : text;
  }
}

function stepKey(turnId: string, step: StepKind, toolCallId: string | undefined): string {
  return `${turnId}\u0000${step}\u0000${toolCallId ?? ""}`;
}

function formatSeconds(ms: number): string {
  return ms % 1000 === 0 ? `${ms / 1000} s` : `${(ms / 1000).toFixed(1)} s`;
}

function shorten(text: string, max: number): string {
  const flat = text.replace(/\s+/g, " ").trim();
  return flat.length <= max ? flat : `${flat.slice(0, max - 1)}…`;
}
