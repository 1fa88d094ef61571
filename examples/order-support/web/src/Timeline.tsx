/**
 * The session timeline: every step of every turn, from the `data-step` parts of the same stream the
 * chat reads (updated in place as a step moves on).
 */
import type { DurableUIMessage, TimelineStep } from "@durable-agents/ui/client";

const duration = (ms: number | undefined) =>
  ms === undefined ? "…" : ms < 1000 ? `${ms} ms` : `${(ms / 1000).toFixed(ms < 10_000 ? 2 : 1)} s`;

function outcomeOf(step: TimelineStep): string {
  if (step.outcome) return step.outcomeText ? `${step.outcome}: ${step.outcomeText}` : step.outcome;
  if (step.detail) return step.detail;
  return step.status === "running" ? "running" : step.status;
}

export function Timeline({ messages }: { messages: DurableUIMessage[] }) {
  const turns = messages.flatMap((message) => {
    if (message.role !== "assistant") return [];
    const steps = message.parts
      .flatMap((part) => (part.type === "data-step" ? [part.data] : []))
      .sort((a, b) => a.seq - b.seq);
    return [{ message, steps }];
  });
  return (
    <aside className="timeline" aria-labelledby="timeline-heading" data-testid="timeline">
      <h2 id="timeline-heading">Session timeline</h2>
      {turns.length === 0 ? <p className="empty">Each step of each turn shows here as it runs.</p> : null}
      {turns.map(({ message, steps }) => {
        const meta = message.metadata;
        return (
          <section key={message.id} className="turn" data-testid="timeline-turn" data-turn={meta?.turnId}>
            <h3>
              {meta?.turnId ?? message.id}: <q>{meta?.userText}</q>
            </h3>
            <p className="turn-status">
              <span className={`badge status-${meta?.status ?? "running"}`} data-testid="turn-status">
                {meta?.status ?? "running"}
              </span>
              {meta?.usage ? (
                <span>
                  {" "}
                  {meta.usage.modelCalls} model call(s), {meta.usage.totalTokens} tokens
                </span>
              ) : null}
            </p>
            <div className="table-scroll">
            <table>
              <caption className="sr-only">Steps of {meta?.turnId}</caption>
              <thead>
                <tr>
                  <th scope="col">Step</th>
                  <th scope="col">Status</th>
                  <th scope="col">Attempts</th>
                  <th scope="col">Duration</th>
                  <th scope="col">Effect</th>
                  <th scope="col">Idempotency key</th>
                  <th scope="col">Outcome</th>
                </tr>
              </thead>
              <tbody>
                {steps.map((step) => (
                  <tr
                    key={step.id}
                    data-testid="timeline-step"
                    data-kind={step.kind}
                    data-status={step.status}
                    data-tool={step.toolName ?? ""}
                  >
                    <th scope="row">
                      {step.kind}
                      {step.toolName ? <span className="tool-name"> {step.toolName}</span> : null}
                    </th>
                    <td>{step.status}</td>
                    <td>{step.attempts > 0 ? step.attempts : "—"}</td>
                    <td>{duration(step.durationMs)}</td>
                    <td>{step.effect ?? (step.toolCallId ? "unknown" : "—")}</td>
                    <td>{step.idempotencyKey ? <code title={step.idempotencyKey}>{step.idempotencyKey.split("/").slice(1).join("/")}</code> : "—"}</td>
                    <td className="outcome">{outcomeOf(step)}</td>
                  </tr>
                ))}
              </tbody>
            </table>
            </div>
          </section>
        );
      })}
    </aside>
  );
}
