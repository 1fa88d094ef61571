/**
 * The conversation: messages with their streamed text and tool calls, an approval card for each
 * call that waits for a person, the message box, and Stop while a turn runs.
 */
import type { UseChatHelpers } from "@ai-sdk/react";
import type { DurableChatTransport, DurableToolMetadata, DurableUIMessage } from "@durable-agents/ui/client";
import { type FormEvent, useId, useState } from "react";
import type { SessionRef } from "./App";

type Part = DurableUIMessage["parts"][number];
type ToolPart = Extract<Part, { toolCallId: string }>;

const isToolPart = (part: Part): part is ToolPart => part.type.startsWith("tool-") || part.type === "dynamic-tool";
const toolName = (part: ToolPart) => (part.type === "dynamic-tool" ? part.toolName : part.type.slice("tool-".length));
const metadataOf = (part: ToolPart) => (part.toolMetadata ?? {}) as Partial<DurableToolMetadata>;
const json = (value: unknown) => (typeof value === "string" ? value : JSON.stringify(value, null, 2));

/** Where the latest turn stands, from its message's metadata. */
function latestTurn(messages: DurableUIMessage[]) {
  const last = messages.at(-1);
  if (last?.role !== "assistant") return null;
  return { turnId: last.metadata?.turnId ?? null, status: last.metadata?.status ?? null };
}

export function ChatView({
  session,
  helpers,
  transport,
  syncing,
  streamError,
  clearStreamError,
}: {
  session: SessionRef;
  helpers: UseChatHelpers<DurableUIMessage>;
  transport: DurableChatTransport;
  syncing: boolean;
  streamError: string | null;
  clearStreamError: () => void;
}) {
  const { messages, status, sendMessage, stop, addToolApprovalResponse, regenerate, clearError } = helpers;
  const [draft, setDraft] = useState("");
  const [stopping, setStopping] = useState(false);
  const inputId = useId();
  const busy = status === "submitted" || status === "streaming";
  const turn = latestTurn(messages);
  const turnActive =
    turn !== null && (turn.status === "running" || turn.status === "awaiting_approval" || turn.status === "cancelling");
  const waitsForApproval = messages.some((m) => m.parts.some((p) => isToolPart(p) && p.state === "approval-requested"));
  const canSend = !busy && !syncing && !turnActive && draft.trim() !== "";

  const onSubmit = (event: FormEvent) => {
    event.preventDefault();
    if (!canSend) return;
    const text = draft.trim();
    setDraft("");
    clearStreamError();
    void sendMessage({ text });
  };

  const onStop = async () => {
    setStopping(true);
    try {
      // Streaming here: stop() aborts the stream and the transport cancels the turn. Otherwise (the
      // turn waits for approval, or runs in another tab's stream) ask the server directly.
      if (busy) await stop();
      else await transport.cancelTurn({ requestId: `stop-${turn?.turnId ?? "turn"}` });
    } finally {
      setStopping(false);
    }
  };

  const statusText = busy
    ? status === "submitted"
      ? "Sending…"
      : "The assistant is answering…"
    : turn?.status === "awaiting_approval" || waitsForApproval
      ? "Waiting for your approval."
      : turn?.status === "cancelling"
        ? "Cancelling the turn…"
        : turn?.status === "running"
          ? "A turn is running."
          : syncing
            ? "Catching up with the session…"
            : "Ready.";

  return (
    <section className="chat" aria-labelledby="chat-heading">
      <h2 id="chat-heading">
        Conversation <span className="session-id">{session.id}</span>
      </h2>
      <div className="messages" role="log" aria-live="polite" aria-label="Messages" data-testid="messages">
        {messages.length === 0 ? <p className="empty">No messages yet. Ask about order 1001 or 1002.</p> : null}
        {messages.map((message) =>
          message.role === "user" ? (
            <article key={message.id} className="message user" data-testid="message" data-role="user">
              <h3 className="sr-only">You</h3>
              <p>
                {message.parts
                  .filter((p) => p.type === "text")
                  .map((p) => p.text)
                  .join("\n")}
              </p>
            </article>
          ) : (
            <AssistantMessage
              key={message.id}
              message={message}
              disabled={busy || syncing}
              onDecide={(id, approved, reason) =>
                void addToolApprovalResponse({ id, approved, ...(reason ? { reason } : {}) })
              }
            />
          ),
        )}
      </div>
      <p className="chat-status" role="status" data-testid="chat-status">
        {statusText}
      </p>
      {streamError || status === "error" ? (
        <div role="alert" className="error">
          <p>The connection to the session failed: {streamError ?? "unknown error"}</p>
          <button
            type="button"
            onClick={() => {
              clearStreamError();
              clearError();
              void regenerate();
            }}
          >
            Retry
          </button>
        </div>
      ) : null}
      <form className="composer" onSubmit={onSubmit}>
        <label htmlFor={inputId}>Your message</label>
        <div className="composer-row">
          <input
            id={inputId}
            name="message"
            autoComplete="off"
            value={draft}
            onChange={(event) => setDraft(event.target.value)}
            placeholder='For example "look up order 1001" or "cancel order 1002"'
            disabled={busy || syncing}
          />
          <button type="submit" disabled={!canSend}>
            Send
          </button>
          {busy || turnActive ? (
            <button type="button" className="danger" onClick={() => void onStop()} disabled={stopping}>
              Stop
            </button>
          ) : null}
        </div>
      </form>
    </section>
  );
}

function AssistantMessage({
  message,
  disabled,
  onDecide,
}: {
  message: DurableUIMessage;
  disabled: boolean;
  onDecide: (approvalId: string, approved: boolean, reason?: string) => void;
}) {
  const metadata = message.metadata;
  const text = message.parts
    .filter((p) => p.type === "text")
    .map((p) => p.text)
    .join("\n\n");
  const reasoning = message.parts.filter((p) => p.type === "reasoning").map((p) => p.text);
  const calls = message.parts.filter(isToolPart);
  const attentions = message.parts.flatMap((p) => (p.type === "data-attention" ? [p.data] : []));
  return (
    <article
      className="message assistant"
      data-testid="message"
      data-role="assistant"
      data-turn={metadata?.turnId}
      data-status={metadata?.status}
    >
      <h3 className="sr-only">Assistant</h3>
      {reasoning.length > 0 ? <p className="reasoning">{reasoning.join(" ")}</p> : null}
      {calls.map((part) =>
        part.state === "approval-requested" ? (
          <ApprovalCard key={part.toolCallId} part={part} disabled={disabled} onDecide={onDecide} />
        ) : (
          <ToolCall key={part.toolCallId} part={part} />
        ),
      )}
      {attentions.map((notice) => (
        <p
          key={notice.interruptId}
          className="turn-note attention"
          data-testid="attention-notice"
          data-status={notice.status}
        >
          {notice.status === "pending"
            ? `Needs attention: the outcome of ${notice.toolName} is unknown (${notice.reason ?? "no result was recorded"}). A person must check it: interrupt ${notice.interruptId}.`
            : `Attention ${notice.interruptId} resolved: ${notice.status.replace("_", " ")}.`}
        </p>
      ))}
      {text ? (
        <p className="answer" data-testid="assistant-text">
          {text}
        </p>
      ) : null}
      {metadata?.status === "cancelled" ? (
        <p className="turn-note" data-testid="turn-note">
          Turn cancelled{metadata.cancellation?.reason ? ` (${metadata.cancellation.reason})` : ""}.
        </p>
      ) : null}
      {metadata?.status === "failed" ? (
        <p className="turn-note error" data-testid="turn-note">
          Turn failed: {metadata.error}
        </p>
      ) : null}
    </article>
  );
}

function ToolCall({ part }: { part: ToolPart }) {
  const meta = metadataOf(part);
  const outcome =
    part.state === "output-available"
      ? json(part.output)
      : part.state === "output-error"
        ? part.errorText
        : part.state === "output-denied"
          ? `rejected${part.approval?.reason ? `: ${part.approval.reason}` : ""}`
          : part.state === "approval-responded"
            ? part.approval.approved
              ? "approved, running"
              : "rejected"
            : "running";
  return (
    <div className="tool-call" data-testid="tool-call" data-tool={toolName(part)} data-state={part.state}>
      <span className="tool-name">{toolName(part)}</span>{" "}
      <code>{typeof part.input === "string" ? part.input : JSON.stringify(part.input)}</code>
      {meta.effect ? <span className="badge">{meta.effect}</span> : null}
      <span className="tool-outcome"> → {outcome}</span>
    </div>
  );
}

function ApprovalCard({
  part,
  disabled,
  onDecide,
}: {
  part: ToolPart & { state: "approval-requested" };
  disabled: boolean;
  onDecide: (approvalId: string, approved: boolean, reason?: string) => void;
}) {
  const name = toolName(part);
  const meta = metadataOf(part);
  const [message, setMessage] = useState("");
  const messageId = useId();
  const titleId = useId();
  return (
    <section className="approval" aria-labelledby={titleId} data-testid="approval-card" data-tool={name}>
      <h4 id={titleId}>
        Approval needed: <span className="tool-name">{name}</span>
      </h4>
      <dl>
        <dt>Arguments</dt>
        <dd>
          <pre>{json(part.input)}</pre>
        </dd>
        <dt>Effect</dt>
        <dd data-testid="approval-effect">{meta.effect ?? "unknown"}</dd>
        <dt>Idempotency key</dt>
        <dd>
          <code>{meta.idempotencyKey ?? "—"}</code>
        </dd>
      </dl>
      <div className="approval-actions">
        <button
          type="button"
          aria-label={`Approve ${name}`}
          disabled={disabled}
          onClick={() => onDecide(part.approval.id, true)}
        >
          Approve
        </button>
        <label htmlFor={messageId}>Message for the model (optional)</label>
        <input
          id={messageId}
          value={message}
          onChange={(event) => setMessage(event.target.value)}
          placeholder="Why not?"
          disabled={disabled}
        />
        <button
          type="button"
          className="danger"
          aria-label={`Reject ${name}`}
          disabled={disabled}
          onClick={() => onDecide(part.approval.id, false, message.trim() || undefined)}
        >
          Reject
        </button>
      </div>
    </section>
  );
}
