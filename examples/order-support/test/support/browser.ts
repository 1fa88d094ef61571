/**
 * What the browser tests share: Debian's Chromium driven by playwright-core (nothing downloads a
 * browser), the page server as a child process, a built page, console checks and screenshots.
 */
import { execFileSync } from "node:child_process";
import { mkdirSync, readdirSync, statSync } from "node:fs";
import { createRequire } from "node:module";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { type Browser, chromium, type Page } from "playwright-core";
import type { SessionSnapshot } from "@durable-agents/core";
import { startChild, type Child } from "./child.js";

const root = fileURLToPath(new URL("../..", import.meta.url));
export const pageServerScript = fileURLToPath(new URL("./page-server-child.mjs", import.meta.url));
export const screenshotDir = `${root}test-output`;
export const chromiumPath = process.env.CHROMIUM_PATH ?? "/usr/bin/chromium";

function newest(dir: string): number {
  let time = 0;
  for (const entry of readdirSync(dir, { withFileTypes: true })) {
    const path = `${dir}/${entry.name}`;
    time = Math.max(time, entry.isDirectory() ? newest(path) : statSync(path).mtimeMs);
  }
  return time;
}

/** Builds the page (Vite) when dist/web is missing or older than web/ (turbo builds it first in CI). */
export function ensureWebBuilt(): void {
  let built = -1;
  try {
    built = statSync(`${root}dist/web/index.html`).mtimeMs;
  } catch {
    // Not built yet.
  }
  if (built >= newest(`${root}web`)) return;
  const vite = join(dirname(createRequire(import.meta.url).resolve("vite/package.json")), "bin", "vite.js");
  execFileSync(process.execPath, [vite, "build", "--config", "web/vite.config.ts"], { cwd: root, stdio: "inherit" });
}

export function launchBrowser(): Promise<Browser> {
  return chromium.launch({
    executablePath: chromiumPath,
    // We run as root: Chromium's sandbox needs an unprivileged user.
    args: ["--no-sandbox", "--disable-dev-shm-usage"],
  });
}

/** The page server on a SQLite file, with a session key so tokens survive a restart. */
export async function startPageServer(
  env: Record<string, string>,
  children: Child[],
): Promise<{ child: Child; base: string; port: number }> {
  const child = startChild(pageServerScript, [], { PORT: "0", ...env });
  children.push(child);
  child.process.stdin.end();
  const match = await child.waitFor(/order support on (http:\/\/127\.0\.0\.1:(\d+)) /);
  return { child, base: match[1]!, port: Number(match[2]) };
}

/** Console errors and uncaught page errors of a page, to assert there are none. */
export function watchConsole(page: Page): string[] {
  const problems: string[] = [];
  page.on("console", (message) => {
    if (message.type() === "error") problems.push(`console.error: ${message.text()}`);
  });
  page.on("pageerror", (error) => problems.push(`page error: ${error.message}`));
  return problems;
}

export async function screenshot(page: Page, name: string): Promise<void> {
  mkdirSync(screenshotDir, { recursive: true });
  await page.screenshot({ path: `${screenshotDir}/${name}.png`, fullPage: true });
}

/** Polls `check` (every 25 ms, a guard of `timeoutMs` against a hang) until it returns a value that is not undefined. */
export async function until<T>(what: string, check: () => Promise<T | undefined>, timeoutMs = 20_000): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await check();
    if (value !== undefined) return value;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 25));
  }
}

/** The session (ID and token) the page shows, from its URL fragment. */
export function sessionOf(page: Page): { id: string; token: string } {
  const params = new URLSearchParams(new URL(page.url()).hash.slice(1));
  const id = params.get("session");
  const token = params.get("token");
  if (!id || !token) throw new Error(`the page's URL has no session: ${page.url()}`);
  return { id, token };
}

export async function snapshotOf(base: string, session: { id: string; token: string }): Promise<SessionSnapshot> {
  const response = await fetch(`${base}/sessions/${session.id}/snapshot`, {
    headers: { "x-session-token": session.token },
  });
  if (!response.ok) throw new Error(`snapshot answered ${response.status}`);
  return (await response.json()) as SessionSnapshot;
}

/** Opens the page, starts a session on it and waits until its conversation is shown. */
export async function startSessionOn(page: Page, base: string): Promise<{ id: string; token: string }> {
  await page.goto(`${base}/`);
  await page.getByRole("button", { name: "Start a session" }).click();
  await page.getByRole("heading", { name: /Conversation/ }).waitFor();
  return sessionOf(page);
}

/** Types a message in the message box and sends it with Enter (the keyboard, as a person would). */
export async function send(page: Page, text: string): Promise<void> {
  const box = page.getByLabel("Your message");
  await box.fill(text);
  await box.press("Enter");
}

/** The text of the assistant's answer in turn `turnId` ("" while there is none). */
export async function answerText(page: Page, turnId: string): Promise<string> {
  const answer = page.locator(`article[data-role="assistant"][data-turn="${turnId}"] [data-testid="assistant-text"]`);
  return (await answer.count()) === 0 ? "" : ((await answer.textContent()) ?? "");
}

/** Waits until the assistant message of `turnId` has ended with `status`. */
export async function waitForTurn(page: Page, turnId: string, status: string, timeoutMs = 30_000): Promise<void> {
  await page
    .locator(`article[data-role="assistant"][data-turn="${turnId}"][data-status="${status}"]`)
    .waitFor({ timeout: timeoutMs });
}
