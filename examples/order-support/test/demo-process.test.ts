/**
 * Runs the built terminal demo as a real child process with stdin that is not a TTY, the way
 * `pnpm demo` runs it in CI, and reads what it prints.
 */
import { spawn } from "node:child_process";
import { fileURLToPath } from "node:url";
import { afterEach, describe, expect, it } from "vitest";
import { tempStoreDir } from "@durable-agents/store-sqlite/testing";

const root = fileURLToPath(new URL("..", import.meta.url));
const demo = fileURLToPath(new URL("../dist/demo.js", import.meta.url));

interface Run {
  readonly code: number | null;
  readonly stdout: string;
  readonly stderr: string;
  /** The session file the run used. */
  readonly db: string;
}

const temps: ReturnType<typeof tempStoreDir>[] = [];
afterEach(() => {
  for (const temp of temps.splice(0)) temp.remove();
});

/** Runs the demo on a new SQLite file of its own (the default store), so runs share no state. */
function runDemo(args: string[]): Promise<Run> {
  const temp = tempStoreDir("order-support-demo-");
  temps.push(temp);
  const db = temp.file("demo.db");
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [demo, ...args], {
      cwd: root,
      // The demo model, whatever the environment says; no colours, so the text can be matched.
      env: { ...process.env, ORDER_SUPPORT_MODEL: "demo", NO_COLOR: "1", ORDER_SUPPORT_DB: db },
      stdio: ["pipe", "pipe", "pipe"],
    });
    let stdout = "";
    let stderr = "";
    child.stdout.setEncoding("utf8").on("data", (chunk: string) => (stdout += chunk));
    child.stderr.setEncoding("utf8").on("data", (chunk: string) => (stderr += chunk));
    child.on("error", reject);
    child.on("close", (code) => resolve({ code, stdout, stderr, db }));
    child.stdin.end();
  });
}

/** The lines with a step mark, as "<mark> <step>" (tool name kept for tool steps). */
function stepLines(stdout: string): string[] {
  return stdout.split("\n").flatMap((line) => {
    const match =
      /^ {2}([✓✗]) (RunModel|CallTool|CallSingleAttemptTool|AwaitToolApproval|ResumeTurn)( (look_up_order|cancel_order|check_parcel|release_stock))?/.exec(
        line,
      );
    return match ? [`${match[1]} ${match[2]}${match[4] ? ` ${match[4]}` : ""}`] : [];
  });
}

describe("the terminal demo as a child process", () => {
  // The same conversation on each framework: the same steps, approval and answers.
  it.each([
    { framework: "openai-agents", args: [] },
    { framework: "ai-sdk", args: ["--framework", "ai-sdk"] },
  ])(
    "runs the default conversation on $framework, approves automatically without a TTY, and prints each step and the answers",
    async ({ framework, args }) => {
      const run = await runDemo(args);
      expect(run.stderr).toBe("");
      expect(run.code).toBe(0);
      expect(run.stdout).toContain(
        `order support demo (framework: ${framework}; model: demo model (local, no API key needed); store: sqlite ${run.db})`,
      );
      expect(run.stdout).toContain(
        "warehouse (an MCP server over stdio): check_parcel (read, from its annotations), release_stock (unclassified, from its annotations)",
      );
      expect(run.stdout).toContain("› look up order 1001");
      expect(run.stdout).toContain("› where is the parcel of order 1001?");
      expect(run.stdout).toContain("› cancel order 1002");
      expect(run.stdout).toContain("› release the stock of order 1002");
      expect(stepLines(run.stdout)).toEqual([
        "✓ RunModel",
        "✓ CallTool look_up_order",
        "✓ ResumeTurn",
        "✓ RunModel",
        // The warehouse's read-only tool: a read by its annotations, no approval.
        "✓ RunModel",
        "✓ CallTool check_parcel",
        "✓ ResumeTurn",
        "✓ RunModel",
        "✓ RunModel",
        "✓ AwaitToolApproval cancel_order",
        "✓ CallSingleAttemptTool cancel_order",
        "✓ ResumeTurn",
        "✓ RunModel",
        // Its destructive tool: unclassified by its annotations, so it waits for approval and runs once.
        "✓ RunModel",
        "✓ AwaitToolApproval release_stock",
        "✓ CallSingleAttemptTool release_stock",
        "✓ ResumeTurn",
        "✓ RunModel",
      ]);
      expect(run.stdout).toContain("cancel_order needs approval: approved automatically (stdin is not a TTY)");
      expect(run.stdout).toContain("release_stock needs approval: approved automatically (stdin is not a TTY)");
      expect(run.stdout).toContain(
        "◆ answer: I asked the warehouse about order 1001: The parcel of order 1001 left the warehouse on its way to Ada, tracking number TRK-1001-7Q.",
      );
      expect(run.stdout).toContain(
        "◆ answer: I asked the warehouse to release the stock of order 1002: Released the stock of order 1002: 1 x 27-inch monitor (MN-27) is back on shelf B-7.",
      );
      expect(run.stdout).toContain(
        "◆ answer: I looked up order 1001: Order 1001 for Ada: 1 x mechanical keyboard (KB-87), 2 x USB-C cable (CB-02). Status: shipped.",
      );
      expect(run.stdout).toContain(
        "◆ answer: I asked to cancel order 1002: Order 1002 is now cancelled (reason: requested by the customer).",
      );
      // The streamed text appears under its RunModel step before the answer line.
      expect(run.stdout.indexOf("    I asked to cancel order 1002")).toBeGreaterThan(-1);
      expect(run.stdout.indexOf("    I asked to cancel order 1002")).toBeLessThan(
        run.stdout.indexOf("◆ answer: I asked to cancel"),
      );
      expect(run.stdout).toMatch(
        /done: 4 turn\(s\), 8 model call\(s\), \d+ tokens; orders cancelled: 1002; cancel calls on the desk: 1; stock releases in the warehouse: 1/,
      );
    },
  );

  it("rejects with --reject, and the model is told why", async () => {
    // On the memory store too: what the demo did before it kept sessions in a file.
    const run = await runDemo(["--store", "memory", "--reject", "I changed my mind", "cancel order 1002"]);
    expect(run.stdout).toContain("store: in memory)");
    expect(run.code).toBe(0);
    expect(stepLines(run.stdout)).toEqual([
      "✓ RunModel",
      "✓ AwaitToolApproval cancel_order",
      "✓ ResumeTurn",
      "✓ RunModel",
    ]);
    expect(run.stdout).toContain("◆ answer: I asked to cancel order 1002: I changed my mind");
    expect(run.stdout).toContain("orders cancelled: none; cancel calls on the desk: 0");
  });

  it("refuses contradictory flags with a usage message", async () => {
    const run = await runDemo(["--yes", "--reject", "no"]);
    expect(run.code).toBe(2);
    expect(run.stderr).toContain("--yes, --reject and --ask exclude each other");
    const badTimeout = await runDemo(["--timeout", "0"]);
    expect(badTimeout.code).toBe(2);
    expect(badTimeout.stderr).toContain("--timeout needs a positive number of seconds");
    const badFramework = await runDemo(["--framework", "langchain"]);
    expect(badFramework.code).toBe(2);
    expect(badFramework.stderr).toContain('--framework must be one of openai-agents, ai-sdk, not "langchain"');
    expect(badFramework.stdout).toBe("");
  });
});
