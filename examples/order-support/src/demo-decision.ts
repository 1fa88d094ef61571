/**
 * What the local demo models answer, framework-free: both the Agents SDK demo model and the AI SDK
 * demo model turn their request into a `DemoConversation` and ask `decideDemoTurn`. The decision
 * depends on the conversation alone, so a retried model step gets the same answer:
 *
 * - if tool results came back after the latest user message: an answer from them;
 * - else "cancel order 1002" asks for `cancel_order`, "look up order 1001" for `look_up_order`
 *   (the order number is parsed from the latest user message, "because ..." becomes the reason);
 * - else it explains what it can do.
 */

/** What a demo model decided for one request. */
export type DemoDecision =
  | { readonly kind: "tool_call"; readonly name: string; readonly arguments: Record<string, string> }
  | { readonly kind: "text"; readonly text: string };

/** One tool result that came back after the latest user message. */
export interface DemoToolResult {
  readonly name: string;
  readonly text: string;
  /** The `order_id` argument of the call this result answers, when it had one. */
  readonly orderId: string | null;
}

/** The part of a request the demo models decide from. */
export interface DemoConversation {
  /** The text of the latest user message ("" when there is none). */
  readonly userText: string;
  /** The tool results after that message, in order. */
  readonly toolResults: readonly DemoToolResult[];
  /** The names of the tools the request offers. */
  readonly offeredTools: ReadonlySet<string>;
}

export function decideDemoTurn(conversation: DemoConversation): DemoDecision {
  const { userText, toolResults, offeredTools } = conversation;
  if (toolResults.length > 0) return { kind: "text", text: answerFromResults(toolResults) };

  const orderId = parseOrderId(userText);
  const wantsCancel = /\bcancel/i.test(userText);
  const wantsLookUp = /\b(look|status|where|find|check|show|track|order)\b/i.test(userText);
  if ((wantsCancel || wantsLookUp) && orderId === null) {
    return { kind: "text", text: "Which order do you mean? Please give me its order number, such as 1001." };
  }
  if (orderId !== null && wantsCancel && offeredTools.has("cancel_order")) {
    return { kind: "tool_call", name: "cancel_order", arguments: { order_id: orderId, reason: parseReason(userText) } };
  }
  if (orderId !== null && wantsLookUp && offeredTools.has("look_up_order")) {
    return { kind: "tool_call", name: "look_up_order", arguments: { order_id: orderId } };
  }
  return {
    kind: "text",
    text: 'I can look up an order or cancel one that has not shipped. Try "look up order 1001" or "cancel order 1002".',
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
