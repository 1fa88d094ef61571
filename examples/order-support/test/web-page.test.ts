/**
 * The chat page in a real browser (Debian's Chromium through playwright-core) against the real
 * server process (the built server with its page, on a SQLite file, the demo model): a whole
 * session with an approval, a rejection, a reload in the middle of an answer, Stop, and two tabs on
 * one session. Every page logs no console error. Screenshots go to test-output/ (git-ignored).
 */
import { tempStoreDir } from "@durable-agents/store-sqlite/testing";
import type { Browser, BrowserContext, Page } from "playwright-core";
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from "vitest";
import { decideDemoTurn } from "../src/demo-decision.js";
import { OrderDesk } from "../src/order-desk.js";
import { deskFileFor } from "../src/order-support-store.js";
import {
  answerText,
  ensureWebBuilt,
  launchBrowser,
  screenshot,
  send,
  snapshotOf,
  startPageServer,
  startSessionOn,
  until,
  waitForTurn,
  watchConsole,
} from "./support/browser.js";
import type { Child } from "./support/child.js";

const tools = new Set(["look_up_order", "cancel_order"]);
/** What the demo model answers a message without tool calls: derived from the message, as the model does. */
const answerTo = (userText: string) => {
  const decision = decideDemoTurn({ userText, toolResults: [], offeredTools: tools });
  if (decision.kind !== "text") throw new Error(`"${userText}" asks for a tool`);
  return decision.text;
};
const helpQuestion = "Hello! What can you do for me today?";

let temp: ReturnType<typeof tempStoreDir>;
let db: string;
let base: string;
let browser: Browser;
const children: Child[] = [];
let context: BrowserContext;
let consoleProblems: string[][] = [];

async function openPage(): Promise<Page> {
  const page = await context.newPage();
  consoleProblems.push(watchConsole(page));
  return page;
}

beforeAll(async () => {
  ensureWebBuilt();
  temp = tempStoreDir("order-support-page-");
  db = temp.file("server.db");
  [{ base }, browser] = await Promise.all([
    startPageServer({ ORDER_SUPPORT_DB: db, ORDER_SUPPORT_SESSION_KEY: "the key of the browser tests" }, children),
    launchBrowser(),
  ]);
});
afterAll(async () => {
  await browser?.close();
  for (const child of children.splice(0)) await child.kill("SIGTERM");
  temp?.remove();
});
beforeEach(async () => {
  context = await browser.newContext({ viewport: { width: 1400, height: 900 } });
  consoleProblems = [];
});
afterEach(async () => {
  await context.close();
  // No page logged an error, whatever the scenario.
  expect(consoleProblems.flat()).toEqual([]);
});

describe("the chat page", () => {
  it("runs a whole session: ask, see the approval card, approve with the keyboard, read the answer; the timeline shows each step", async () => {
    const page = await openPage();
    const session = await startSessionOn(page, base);
    await screenshot(page, "1-empty-session");

    await send(page, "look up order 1001");
    await waitForTurn(page, "turn-1", "completed");
    expect(await answerText(page, "turn-1")).toBe(
      "I looked up order 1001: Order 1001 for Ada: 1 x mechanical keyboard (KB-87), 2 x USB-C cable (CB-02). Status: shipped.",
    );

    await send(page, "cancel order 1002 because I moved");
    const card = page.getByTestId("approval-card");
    await card.waitFor();
    await expect.poll(() => card.getByRole("heading").textContent()).toBe("Approval needed: cancel_order");
    expect(await card.locator("pre").textContent()).toBe(
      JSON.stringify({ order_id: "1002", reason: "I moved" }, null, 2),
    );
    expect(await card.getByTestId("approval-effect").textContent()).toBe("non_idempotent_write");
    expect(await card.textContent()).toContain(`${session.id}/turn-2/`);
    expect(await page.getByRole("status").textContent()).toBe("Waiting for your approval.");
    await expect.poll(() => page.getByRole("button", { name: "Stop" }).isVisible()).toBe(true);
    await screenshot(page, "2-approval-card");
    // Nothing ran before the approval.
    expect(deskCancels()).toEqual([]);

    // Keyboard only: focus the Approve button and press Enter.
    await page.getByRole("button", { name: "Approve cancel_order" }).focus();
    await page.keyboard.press("Enter");
    await waitForTurn(page, "turn-2", "completed");
    expect(await answerText(page, "turn-2")).toBe(
      "I asked to cancel order 1002: Order 1002 is now cancelled (reason: I moved).",
    );
    await expect.poll(() => page.getByTestId("approval-card").count()).toBe(0);
    expect(await page.getByRole("button", { name: "Stop" }).count()).toBe(0);

    // The timeline: one row per step of each turn, as the session recorded them.
    const snapshot = await snapshotOf(base, session);
    const rows = page.locator('[data-testid="timeline-turn"][data-turn="turn-2"] [data-testid="timeline-step"]');
    await expect.poll(() => rows.count()).toBe(snapshot.turn!.steps.length);
    const shown = await rows.evaluateAll((trs) =>
      trs.map((tr) => [tr.getAttribute("data-kind"), tr.getAttribute("data-status")].join(" ")),
    );
    expect(shown).toEqual(snapshot.turn!.steps.map((step) => `${step.step} ${step.status}`));
    const callRow = rows.filter({ has: page.locator('th:has-text("CallSingleAttemptTool")') });
    const cells = await callRow.locator("td").allInnerTexts();
    const call = snapshot.turn!.calls[0]!;
    expect(cells).toEqual([
      "completed",
      "1",
      expect.stringMatching(/^\d+ ms$/),
      "non_idempotent_write",
      call.idempotencyKey!.split("/").slice(1).join("/"),
      "succeeded: Order 1002 is now cancelled (reason: I moved).",
    ]);
    const approvalRow = rows.filter({ has: page.locator('th:has-text("AwaitToolApproval")') });
    expect(await approvalRow.locator("td").last().textContent()).toBe("approved");
    expect(await page.locator('[data-turn="turn-2"] [data-testid="turn-status"]').textContent()).toBe("completed");
    await screenshot(page, "3-answered");
    // The cancellation ran once, by the desk's own count.
    expect(deskCancels()).toEqual(["1002 cancelled"]);
  });

  it("rejects with a message: the model reads it, nothing runs", async () => {
    const page = await openPage();
    await startSessionOn(page, base);
    await send(page, "cancel order 1001");
    await page.getByTestId("approval-card").waitFor();
    await page.getByLabel("Message for the model (optional)").fill("I will keep it after all");
    await page.getByRole("button", { name: "Reject cancel_order" }).click();
    await waitForTurn(page, "turn-1", "completed");
    expect(await answerText(page, "turn-1")).toBe("I asked to cancel order 1001: I will keep it after all");
    const call = page.locator('[data-testid="tool-call"][data-tool="cancel_order"]');
    expect(await call.getAttribute("data-state")).toBe("output-denied");
    expect(await call.textContent()).toContain("rejected: I will keep it after all");
    const approvalRow = page.locator('[data-testid="timeline-step"][data-kind="AwaitToolApproval"]');
    expect(await approvalRow.locator("td").last().textContent()).toBe("rejected: I will keep it after all");
    expect(await page.locator('[data-testid="timeline-step"][data-kind="CallSingleAttemptTool"]').count()).toBe(0);
    await screenshot(page, "4-rejected");
    expect(deskCancels().filter((c) => c.startsWith("1001 "))).toEqual([]);
  });

  it("reloaded in the middle of an answer, shows the whole answer once: no character missing or doubled", async () => {
    const page = await openPage();
    const session = await startSessionOn(page, base);
    const expected = answerTo(helpQuestion);
    await send(page, helpQuestion);
    // Part of the answer is on the page, not all of it.
    await until("a part of the answer", async () => {
      const text = await answerText(page, "turn-1");
      return text.length > 0 && text.length < expected.length ? text : undefined;
    });
    const loads: { openTurnId: string | null }[] = [];
    page.on("response", (response) => {
      if (response.url().endsWith("/ui/messages")) void response.json().then((body) => loads.push(body));
    });
    await page.reload();
    await waitForTurn(page, "turn-1", "completed");
    // The page opened again while the turn ran, and continued it from the stream.
    expect(loads[0]).toMatchObject({ openTurnId: "turn-1" });
    expect(await answerText(page, "turn-1")).toBe(expected);
    expect(await page.locator('article[data-role="assistant"]').count()).toBe(1);
    expect(await page.locator('article[data-role="user"] p').allInnerTexts()).toEqual([helpQuestion]);
    const snapshot = await snapshotOf(base, session);
    expect(snapshot.messages.at(-1)).toMatchObject({ role: "assistant", text: expected });
    await screenshot(page, "5-after-reload");
  });

  it("Stop during a turn cancels it: the turn ends cancelled and the page says so", async () => {
    const page = await openPage();
    const session = await startSessionOn(page, base);
    const expected = answerTo(helpQuestion);
    await send(page, helpQuestion);
    await until("a part of the answer", async () => {
      const text = await answerText(page, "turn-1");
      return text.length > 0 && text.length < expected.length ? text : undefined;
    });
    await page.getByRole("button", { name: "Stop" }).click();
    await waitForTurn(page, "turn-1", "cancelled");
    expect(await page.getByTestId("turn-note").textContent()).toBe("Turn cancelled (stopped in the chat).");
    // The stopped model call's text was discarded by the session, and the page does not show it.
    expect(await answerText(page, "turn-1")).toBe("");
    expect(await page.locator('[data-testid="timeline-step"][data-kind="RunModel"]').getAttribute("data-status")).toBe(
      "failed",
    );
    const snapshot = await snapshotOf(base, session);
    expect(snapshot.turn).toMatchObject({
      phase: "cancelled",
      cancellation: { requestId: "stop-turn-1", reason: "stopped in the chat", modelCallAborted: true },
    });
    await screenshot(page, "6-stopped");
    // The session takes the next message.
    await send(page, "look up order 1002");
    await waitForTurn(page, "turn-2", "completed");
    expect(await answerText(page, "turn-2")).toContain("I looked up order 1002: Order 1002 for Grace");
  });

  it("two tabs on one session see the same conversation, each turn live, whichever tab acts", async () => {
    const first = await openPage();
    await startSessionOn(first, base);
    const second = await openPage();
    await second.goto(first.url());
    await second.getByRole("heading", { name: /Conversation/ }).waitFor();

    await send(first, "look up order 1001");
    await waitForTurn(second, "turn-1", "completed");
    await waitForTurn(first, "turn-1", "completed");

    await send(second, "cancel order 1002 because I changed my mind");
    await first.getByTestId("approval-card").waitFor();
    await second.getByTestId("approval-card").waitFor();
    await first.getByLabel("Message for the model (optional)").fill("not from this tab");
    await first.getByRole("button", { name: "Reject cancel_order" }).click();
    await waitForTurn(second, "turn-2", "completed");
    await waitForTurn(first, "turn-2", "completed");

    const conversation = (page: Page) => page.getByTestId("messages").textContent();
    expect(await conversation(second)).toBe(await conversation(first));
    expect(await answerText(second, "turn-2")).toBe(await answerText(first, "turn-2"));
    expect(await answerText(first, "turn-2")).toBe("I asked to cancel order 1002: not from this tab");
    await expect.poll(() => second.getByTestId("approval-card").count()).toBe(0);
    expect(await second.locator('article[data-role="user"] p').allInnerTexts()).toEqual([
      "look up order 1001",
      "cancel order 1002 because I changed my mind",
    ]);
    await screenshot(second, "7-second-tab");
  });
});

function deskCancels(): string[] {
  const desk = OrderDesk.open(deskFileFor(db));
  try {
    return desk.cancelCalls().map((call) => `${call.orderId} ${call.outcome}`);
  } finally {
    desk.close();
  }
}
