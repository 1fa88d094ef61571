/**
 * What the local demo models answer, framework-free: both the Agents SDK demo model and the AI SDK
 * demo model turn their request into `DemoMessage`s, find the running turn in them
 * (`demoConversation`) and ask `decideDemoTurn`. The decision depends on the request alone, so a
 * retried model step gets the same answer:
 *
 * - each message of the turn asks for at most one call: "cancel order 1002" for `cancel_order`,
 *   "look up order 1001" for `look_up_order` (the order number is parsed from the message,
 *   "because ..." becomes the reason); when the warehouse's MCP tools are offered, "where is the
 *   parcel of order 1001" asks for `check_parcel` and "release the stock of order 1002" for
 *   `release_stock`. The turn's own message and the messages steered into it
 *   while it ran are served latest first; a call whose result came back is not asked for again;
 * - once every such call has its result: an answer from the results, and a line for each steered
 *   message that asked for no call;
 * - a turn that asked for no call at all: which order is meant, or what the model can do.
 */
import { ATTENTION_NOTE_PREFIX, isTurnNote } from "@durable-agents/core/engine";

/** What a demo model decided for one request. */
export type DemoDecision =
  | { readonly kind: "tool_call"; readonly name: string; readonly arguments: Record<string, string> }
  | { readonly kind: "text"; readonly text: string };

/** One tool result that came back in the running turn. */
export interface DemoToolResult {
  readonly name: string;
  readonly text: string;
  /** The `order_id` argument of the call this result answers, when it had one. */
  readonly orderId: string | null;
}

/** One message of a model request, as the demo models read it. */
export type DemoMessage =
  | { readonly kind: "user"; readonly text: string }
  | { readonly kind: "tool_result"; readonly result: DemoToolResult }
  | { readonly kind: "other" };

/** The part of a request the demo models decide from. */
export interface DemoConversation {
  /** The text of the running turn's own user message ("" when there is none). */
  readonly userText: string;
  /** The messages steered into the running turn after its own message, in order. Default none. */
  readonly steered?: readonly string[];
  /** The tool results of the running turn, in order. */
  readonly toolResults: readonly DemoToolResult[];
  /** The names of the tools the request offers. */
  readonly offeredTools: ReadonlySet<string>;
}

/**
 * The running turn of a request. Its own message is the last message of the person that follows
 * neither another one of theirs nor a tool result: a message right after one of those was steered
 * into the running turn (core adds a steered message to the history after the turn's message, or
 * after the outcome of the call it joined behind). The notes core leaves after a failed or cancelled
 * turn are not the person's messages.
 */
export function demoConversation(
  messages: readonly DemoMessage[],
  offeredTools: ReadonlySet<string>,
): DemoConversation {
  const fromPerson = (message: DemoMessage | undefined): message is Extract<DemoMessage, { kind: "user" }> =>
    message?.kind === "user" && !isTurnNote(message.text);
  let start = -1;
  for (let index = messages.length - 1; index >= 0; index--) {
    if (!fromPerson(messages[index])) continue;
    const before = messages[index - 1];
    if (fromPerson(before) || before?.kind === "tool_result") continue;
    start = index;
    break;
  }
  // A request that does not look like a session's history: its last message of the person.
  if (start === -1) start = messages.findLastIndex((message) => fromPerson(message));
  if (start === -1) return { userText: "", steered: [], toolResults: [], offeredTools };
  const turn = messages.slice(start + 1);
  return {
    userText: (messages[start] as Extract<DemoMessage, { kind: "user" }>).text,
    steered: turn.filter(fromPerson).map((message) => message.text),
    toolResults: turn.flatMap((message) => (message.kind === "tool_result" ? [message.result] : [])),
    offeredTools,
  };
}

export function decideDemoTurn(conversation: DemoConversation): DemoDecision {
  const { userText, toolResults, offeredTools } = conversation;
  const steered = (conversation.steered ?? []).map((text) => ({ text, decision: decideMessage(text, offeredTools) }));
  const own = decideMessage(userText, offeredTools);
  const answered = (call: Extract<DemoDecision, { kind: "tool_call" }>) =>
    toolResults.some((result) => result.name === call.name && result.orderId === (call.arguments.order_id ?? null));
  // Latest first: what the person added while the turn ran may change what they want first.
  for (const decision of [...steered.map((s) => s.decision).reverse(), own]) {
    if (decision.kind === "tool_call" && !answered(decision)) return decision;
  }
  const lines: string[] = [];
  if (toolResults.length > 0) lines.push(answerFromResults(toolResults));
  else if (own.kind === "text") lines.push(own.text);
  for (const message of steered) if (message.decision.kind === "text") lines.push(`Also noted: "${message.text}".`);
  return { kind: "text", text: lines.join("\n") };
}

/** What one message of the person asks for: a call, or (asking for none) the text the model answers. */
function decideMessage(text: string, offeredTools: ReadonlySet<string>): DemoDecision {
  // Core's note of a follow-up turn: a person checked a call whose outcome was unknown. It asks for
  // nothing (a call run again already ran); the model passes on what was found.
  if (text.startsWith(ATTENTION_NOTE_PREFIX)) {
    return { kind: "text", text: `Update: ${text.slice(ATTENTION_NOTE_PREFIX.length).trim()}` };
  }
  const orderId = parseOrderId(text);
  const wantsCancel = /\bcancel/i.test(text);
  const wantsLookUp = /\b(look|status|where|find|check|show|track|order)\b/i.test(text);
  // The warehouse's tools, when the request offers them (the warehouse is an MCP server).
  const wantsRelease = offeredTools.has("release_stock") && /\brelease\b/i.test(text) && /\bstock\b/i.test(text);
  const wantsParcel = offeredTools.has("check_parcel") && /\b(parcel|package|shipment|warehouse)\b/i.test(text);
  if ((wantsCancel || wantsLookUp || wantsRelease || wantsParcel) && orderId === null) {
    return { kind: "text", text: "Which order do you mean? Please give me its order number, such as 1001." };
  }
  if (orderId !== null && wantsRelease) {
    return { kind: "tool_call", name: "release_stock", arguments: { order_id: orderId } };
  }
  if (orderId !== null && wantsParcel && !wantsCancel) {
    return { kind: "tool_call", name: "check_parcel", arguments: { order_id: orderId } };
  }
  if (orderId !== null && wantsCancel && offeredTools.has("cancel_order")) {
    return { kind: "tool_call", name: "cancel_order", arguments: { order_id: orderId, reason: parseReason(text) } };
  }
  if (orderId !== null && wantsLookUp && offeredTools.has("look_up_order")) {
    return { kind: "tool_call", name: "look_up_order", arguments: { order_id: orderId } };
  }
  const warehouse = offeredTools.has("check_parcel")
    ? ' The warehouse can say where a parcel is ("where is the parcel of order 1001?") and release the stock of an order that is not packed ("release the stock of order 1002").'
    : "";
  return {
    kind: "text",
    text: `I can look up an order or cancel one that has not shipped. Try "look up order 1001" or "cancel order 1002".${warehouse}`,
  };
}

/** The `order_id` of a call's JSON arguments, or null. */
export function orderIdOfArguments(args: string | undefined): string | null {
  if (args === undefined) return null;
  try {
    const parsed: unknown = JSON.parse(args);
    const orderId =
      typeof parsed === "object" && parsed !== null ? (parsed as Record<string, unknown>).order_id : undefined;
    return typeof orderId === "string" ? orderId : null;
  } catch {
    return null;
  }
}

/** One sentence per result, naming the order; the result's text is quoted as it came back. */
function answerFromResults(results: readonly DemoToolResult[]): string {
  return results
    .map((result) => {
      const order = result.orderId === null ? "the order" : `order ${result.orderId}`;
      if (result.name === "look_up_order") return `I looked up ${order}: ${result.text}`;
      if (result.name === "cancel_order") return `I asked to cancel ${order}: ${result.text}`;
      if (result.name === "check_parcel") return `I asked the warehouse about ${order}: ${result.text}`;
      if (result.name === "release_stock")
        return `I asked the warehouse to release the stock of ${order}: ${result.text}`;
      return `${result.name} answered: ${result.text}`;
    })
    .join("\n");
}

/** The order number in a message: the number after "order" ("order 1002", "order #1002"), or else the first 3-10 digit number. */
export function parseOrderId(text: string): string | null {
  const afterWord = /\border\s*(?:no\.?|number|#)?\s*#?(\d{3,10})\b/i.exec(text);
  if (afterWord) return afterWord[1]!;
  const anyNumber = /\b(\d{3,10})\b/.exec(text);
  return anyNumber ? anyNumber[1]! : null;
}

function parseReason(text: string): string {
  const because = /\b(?:because|since|as)\s+(.+)$/i.exec(text.trim());
  const reason = because?.[1]?.replace(/[.!]+$/, "").trim();
  return reason ? reason : "requested by the customer";
}

/** Splits text into chunks of about `size` characters, each ending at a word boundary when it can. */
export function chunkText(text: string, size: number): string[] {
  const chunks: string[] = [];
  let rest = text;
  while (rest.length > size) {
    // Cut after the last space that keeps the chunk within `size`, or at `size` in a long word.
    const space = rest.lastIndexOf(" ", size - 1);
    const cut = space <= 0 ? size : space + 1;
    chunks.push(rest.slice(0, cut));
    rest = rest.slice(cut);
  }
  if (rest.length > 0) chunks.push(rest);
  return chunks;
}
