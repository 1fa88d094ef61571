/**
 * A compact terminal view of a session's events: one line per step with a status mark, model text
 * streamed under its RunModel step, and the outcome of each tool call.
 *
 * On a TTY (`live`), a running step's line is written at once and rewritten in place with its mark
 * when it ends. Otherwise a step's line is written when it ends, unless something else has to be
 * printed first (streamed text, a prompt, another step), in which case a "running" line comes first.
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
}

interface RunningStep {
  readonly label: string;
  readonly startedAt: number;
  readonly step: StepKind;
  readonly turnId: string;
  /** Calls the model asked for in this RunModel step, shown on its line. */
  requested: string | null;
  /** The outcome of this tool step's call, shown on its line. */
  outcome: string | null;
}

const maxShown = 100;

export class ProgressRenderer {
  readonly #out: ProgressOutput;
  readonly #live: boolean;
  readonly #color: boolean;
  readonly #running = new Map<string, RunningStep>();
  readonly #calls = new Map<string, string>();
  /** The step whose start line is pending: written without a newline (live) or not written yet. */
  #pending: string | null = null;
  /** Streamed text was written and its line is not ended yet. */
  #inText = false;

  constructor(out: ProgressOutput, options: ProgressRendererOptions = {}) {
    this.#out = out;
    this.#live = options.live ?? false;
    this.#color = options.color ?? this.#live;
  }

  handle(event: SessionEvent): void {
    switch (event.type) {
      case "turn_started":
        this.line(`${this.#paint("1", "›")} ${event.data.text}`);
        break;
      case "step_started":
        this.#stepStarted(event.data.turnId, event.data.step, event.data.toolCallId, event.data.attempt, Date.parse(event.at));
        break;
      case "step_completed":
        this.#stepCompleted(event.data.turnId, event.data.step, event.data.toolCallId, event.data.status, event.data.detail, Date.parse(event.at));
        break;
      case "text_delta":
        this.#text(event.data.text);
        break;
      case "tool_calls_requested": {
        for (const call of event.data.calls) this.#calls.set(call.toolCallId, `${call.name} ${shorten(call.arguments, 60)}`);
        const asked = event.data.calls.map((call) => this.#calls.get(call.toolCallId)).join(", ");
        const model = [...this.#running.values()].find((step) => step.step === "RunModel" && step.turnId === event.data.turnId);
        if (model) model.requested = asked;
        else this.line(`  ${this.#paint("2", "↳")} asks for ${asked}`);
        break;
      }
      case "tool_call_completed": {
        const outcome = `${event.data.status}: ${shorten(event.data.text, maxShown)}`;
        const toolStep = [...this.#running.entries()].find(
          ([key, step]) => step.step !== "RunModel" && step.step !== "AwaitToolApproval" && key.endsWith(`\u0000${event.data.toolCallId}`),
        );
        if (toolStep) toolStep[1].outcome = outcome;
        else this.line(`    ${this.#paint(event.data.status === "succeeded" ? "32" : "33", "↳")} ${event.data.name} ${outcome}`);
        break;
      }
      case "interrupt_resolved":
        this.line(
          `    ${this.#paint("2", "↳")} ${event.data.approved ? "approved" : "rejected"}${event.data.message ? `: ${event.data.message}` : ""}`,
        );
        break;
      case "turn_failed":
        this.line(`  ${this.#paint("31", "✗")} turn failed: ${event.data.error}`);
        break;
      case "session_recovered":
        this.line(`  ${this.#paint("33", "!")} a worker took over the session (lease ${event.data.fence})`);
        break;
      default:
        break;
    }
  }

  /** Prints a whole line, after ending any pending step line or streamed text. */
  line(text: string): void {
    this.settle();
    this.#out.write(`${text}\n`);
  }

  /** Ends any partial output, so that a prompt or another line starts on a fresh line. */
  settle(): void {
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

  #stepStarted(turnId: string, step: StepKind, toolCallId: string | undefined, attempt: number, at: number): void {
    this.settle();
    const key = stepKey(turnId, step, toolCallId);
    const call = toolCallId ? this.#calls.get(toolCallId) : undefined;
    const label = `${step}${call ? ` ${call}` : ""}${attempt > 1 ? ` (attempt ${attempt})` : ""}`;
    this.#running.set(key, { label, startedAt: at, step, turnId, requested: null, outcome: null });
    this.#pending = key;
    if (this.#live) this.#out.write(`  ${this.#paint("36", "▸")} ${label}`);
  }

  #stepCompleted(
    turnId: string,
    step: StepKind,
    toolCallId: string | undefined,
    status: "completed" | "failed",
    detail: string | undefined,
    at: number,
  ): void {
    const key = stepKey(turnId, step, toolCallId);
    const running = this.#running.get(key);
    this.#running.delete(key);
    const label = running?.label ?? step;
    const mark = status === "completed" ? this.#paint("32", "✓") : this.#paint("31", "✗");
    const parts = [`  ${mark} ${label}`];
    if (running?.requested) parts.push(`→ ${running.requested}`);
    if (running?.outcome) parts.push(`→ ${running.outcome}`);
    if (detail) parts.push(this.#paint("2", shorten(detail, maxShown)));
    if (running && Number.isFinite(at - running.startedAt)) parts.push(this.#paint("2", `(${Math.max(0, at - running.startedAt)} ms)`));
    const text = parts.join("  ");
    if (this.#pending === key && !this.#inText) {
      this.#pending = null;
      this.#out.write(this.#live ? `\r\x1b[2K${text}\n` : `${text}\n`);
      return;
    }
    this.line(text);
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

function shorten(text: string, max: number): string {
  const flat = text.replace(/\s+/g, " ").trim();
  return flat.length <= max ? flat : `${flat.slice(0, max - 1)}…`;
}
