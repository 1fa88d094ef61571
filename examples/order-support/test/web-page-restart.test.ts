/**
 * The chat page across a server restart: the server process is killed (SIGKILL) in the middle of a
 * streamed answer and started again on the same SQLite file, port and session key. The page's
 * stream reconnects after the last position it read; the new server's worker takes the session
 * over once the dead one's lease ends and runs the model step again, and the page shows the answer
 * whole and once.
 */
import { tempStoreDir } from "@durable-agents/store-sqlite/testing";
import type { Browser } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { decideDemoTurn } from "../src/demo-decision.js";
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

let temp: ReturnType<typeof tempStoreDir>;
let browser: Browser;
const children: Child[] = [];

beforeAll(async () => {
  ensureWebBuilt();
  temp = tempStoreDir("order-support-page-restart-");
  browser = await launchBrowser();
});
afterAll(async () => {
  await browser?.close();
  for (const child of children.splice(0)) await child.kill("SIGKILL");
  temp?.remove();
});

describe("the chat page when the server restarts", () => {
  it("continues a streamed answer after a SIGKILL and a restart: no character missing or doubled", async () => {
    const env = { ORDER_SUPPORT_DB: temp.file("server.db"), ORDER_SUPPORT_SESSION_KEY: "the key of the restart test" };
    const first = await startPageServer(env, children);
    const context = await browser.newContext({ viewport: { width: 1400, height: 900 } });
    const page = await context.newPage();
    const problems = watchConsole(page);
    const session = await startSessionOn(page, first.base);

    const question = "Hi, what can you do for me?";
    const decision = decideDemoTurn({
      userText: question,
      toolResults: [],
      offeredTools: new Set(["look_up_order", "cancel_order"]),
    });
    if (decision.kind !== "text") throw new Error("the question asks for a tool");
    await send(page, question);
    const before = await until("a part of the answer", async () => {
      const text = await answerText(page, "turn-1");
      return text.length > 0 && text.length < decision.text.length ? text : undefined;
    });
    expect(decision.text.startsWith(before)).toBe(true);

    const killed = await first.child.kill("SIGKILL");
    expect(killed.signal).toBe("SIGKILL");
    // The page is still there, with what it had streamed so far, waiting for its stream to come back.
    expect(await page.getByRole("status").textContent()).toBe("The assistant is answering…");

    const second = await startPageServer({ ...env, PORT: String(first.port) }, children);
    expect(second.base).toBe(first.base);
    await waitForTurn(page, "turn-1", "completed");
    expect(await answerText(page, "turn-1")).toBe(decision.text);
    expect(await page.locator('article[data-role="assistant"]').count()).toBe(1);

    // The session ran the model step again after taking it over: the timeline shows one RunModel
    // step (the interrupted attempt is not a second step), completed.
    const snapshot = await snapshotOf(second.base, session);
    expect(snapshot.messages.at(-1)).toMatchObject({ role: "assistant", text: decision.text });
    const modelRows = page.locator('[data-testid="timeline-step"][data-kind="RunModel"]');
    expect(await modelRows.count()).toBe(1);
    expect(await modelRows.getAttribute("data-status")).toBe("completed");
    await screenshot(page, "8-after-restart");

    // And the next message works on the new server.
    await send(page, "look up order 1001");
    await waitForTurn(page, "turn-2", "completed");
    expect(await answerText(page, "turn-2")).toMatch(/^I looked up order 1001: Order 1001 for Ada/);
    await context.close();
    // A dropped connection is logged by Chromium as a failed request; nothing else may be.
    expect(problems.filter((p) => !/Failed to load resource|ERR_/.test(p))).toEqual([]);
  });
});
