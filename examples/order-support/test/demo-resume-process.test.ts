/**
 * Durability of the terminal demo, as real processes on one SQLite file: the demo stops at the
 * approval question and is killed there; a second run finds the waiting session, continues it from
 * the approval, and the cancellation runs exactly once, counted by the order desk's own file.
 */
import { afterEach, describe, expect, it } from "vitest";
import { SessionClient, type SessionEvent } from "@durable-agents/core";
import { SqliteStore } from "@durable-agents/store-sqlite";
import { tempStoreDir } from "@durable-agents/store-sqlite/testing";
import { OrderDesk } from "../src/order-desk.js";
import { deskFileFor, storeSideFile } from "../src/order-support-store.js";
import { warehouseReleases } from "../src/warehouse.js";
import { demoScript, runToEnd, startChild } from "./support/child.js";

const uuid = /session ([0-9a-f-]{36})/;
let temp: ReturnType<typeof tempStoreDir> | null = null;

afterEach(() => {
  temp?.remove();
  temp = null;
});

function newDb(): string {
  temp = tempStoreDir("order-support-demo-");
  return temp.file("demo.db");
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

/** What the desk's own file says, read by this test process. */
function deskCalls(db: string) {
  const desk = OrderDesk.open(deskFileFor(db));
  try {
    return { calls: desk.cancelCalls(), order1002: desk.order("1002")?.status };
  } finally {
    desk.close();
  }
}

/** The session's event log, read from the store file by this test process. */
async function eventsOf(db: string, sessionId: string): Promise<SessionEvent[]> {
  const store = new SqliteStore({ path: db });
  try {
    return await new SessionClient({ store }).readEvents(sessionId, { limit: 10_000 });
  } finally {
    await store.close();
  }
}

describe("the terminal demo resumes a session it was killed in", () => {
  it.each([
    { framework: "openai-agents", stop: "SIGKILL" as const, secondRun: "answered on stdin (--ask)" },
    // SIGTERM: a Ctrl-C at the approval question would cancel the turn (demo-cancel-process.test.ts).
    { framework: "ai-sdk", stop: "SIGTERM" as const, secondRun: "approved automatically (no TTY)" },
  ])(
    "on $framework, stopped by $stop at the approval question, continued by a second process, $secondRun",
    async ({ framework, stop, secondRun }) => {
      const db = newDb();
      const env = { ORDER_SUPPORT_DB: db };
      const frameworkArgs = ["--framework", framework];

      // First process: asks for approval (stdin is a pipe; --ask makes it ask anyway), and is stopped there.
      const first = startChild(demoScript, [...frameworkArgs, "--ask"], env);
      await first.waitFor("? Approve cancel_order");
      const sessionId = uuid.exec(first.stdout())![1]!;
      const firstExit = await first.kill(stop);
      if (stop === "SIGKILL") expect(firstExit.signal).toBe("SIGKILL");
      else {
        expect(firstExit.code).toBe(0);
        expect(first.stdout()).toContain(
          `stopped (SIGTERM); session ${sessionId} is kept in sqlite ${db}: run the demo again to continue it`,
        );
      }
      // Nothing ran at the desk: the call waits for approval.
      expect(deskCalls(db).calls).toEqual([]);
      expect(deskCalls(db).order1002).toBe("processing");

      // Second process: offered the waiting session, continues it from the approval.
      const second = startChild(
        demoScript,
        secondRun.includes("--ask") ? [...frameworkArgs, "--ask"] : frameworkArgs,
        env,
      );
      if (secondRun.includes("--ask")) {
        await second.waitFor(`session ${sessionId} (started `);
        await second.waitFor("? Continue it? [Y/n]");
        second.answer("y");
        await second.waitFor("? Approve cancel_order");
        second.answer("y");
        await second.waitFor("? Approve release_stock");
        second.answer("y");
      } else {
        second.process.stdin.end();
      }
      const secondExit = await second.exited;
      expect(second.stderr()).toBe("");
      expect(secondExit.code).toBe(0);
      const out = second.stdout();
      expect(out).toContain(`Resuming session ${sessionId}`);
      expect(out).toContain(
        ': waiting for your approval of cancel_order {"order_id":"1002","reason":"requested by the customer"}',
      );
      // It does not start a session of its own, and the earlier turn is shown, not run again.
      expect(out).not.toMatch(/^session [0-9a-f-]{36}$/m);
      expect(out).toContain("  ◆ answer: I looked up order 1001:");
      expect(out).toContain("  ◆ answer: I asked the warehouse about order 1001:");
      // The warehouse is a new process now (the first one ended with its demo); the session's next
      // MCP call, after the cancellation, goes to it.
      expect(stepLines(out)).toEqual([
        "✓ AwaitToolApproval cancel_order",
        "✓ CallSingleAttemptTool cancel_order",
        "✓ ResumeTurn",
        "✓ RunModel",
        "✓ RunModel",
        "✓ AwaitToolApproval release_stock",
        "✓ CallSingleAttemptTool release_stock",
        "✓ ResumeTurn",
        "✓ RunModel",
      ]);
      expect(out).toContain(
        secondRun.includes("--ask")
          ? "cancel_order needs approval: approved at the terminal"
          : "cancel_order needs approval: approved automatically (stdin is not a TTY)",
      );
      expect(out).toContain(
        "◆ answer: I asked to cancel order 1002: Order 1002 is now cancelled (reason: requested by the customer).",
      );
      expect(out).toContain(
        "◆ answer: I asked the warehouse to release the stock of order 1002: Released the stock of order 1002: 1 x 27-inch monitor (MN-27) is back on shelf B-7.",
      );
      expect(out).toMatch(
        /done: 4 turn\(s\), 8 model call\(s\), \d+ tokens; orders cancelled: 1002; cancel calls on the desk: 1; stock releases in the warehouse: 1\n/,
      );

      // Exactly once, by the desk's file and by the session's log.
      expect(deskCalls(db)).toEqual({
        calls: [
          {
            orderId: "1002",
            reason: "requested by the customer",
            outcome: "cancelled",
            detail: null,
            at: expect.any(String),
          },
        ],
        order1002: "cancelled",
      });
      const events = await eventsOf(db, sessionId);
      expect(events.map((e) => e.seq)).toEqual(events.map((_, i) => i + 1));
      // One single-attempt step each for the cancellation and the release.
      const singleSteps = events.filter((e) => e.type === "step_started" && e.data.step === "CallSingleAttemptTool");
      expect(singleSteps.map((e) => (e.type === "step_started" ? e.data.turnId : ""))).toEqual(["turn-3", "turn-4"]);
      expect(events.filter((e) => e.type === "turn_completed")).toHaveLength(4);
      // The warehouse released the stock once, for the session's call: the key it got in _meta.
      const releaseCall = singleSteps[1]!.type === "step_started" ? singleSteps[1]!.data.toolCallId : undefined;
      expect(warehouseReleases(storeSideFile(db, "warehouse.json"))).toEqual([
        {
          orderId: "1002",
          key: `${sessionId}/turn-4/${releaseCall}`,
          text: expect.any(String),
          at: expect.any(String),
        },
      ]);

      // A third run has nothing to resume: it starts a new session, on a desk that remembers.
      const third = await runToEnd(demoScript, [...frameworkArgs, "look up order 1002"], env);
      expect(third.code).toBe(0);
      expect(third.stdout).not.toContain("Resuming");
      expect(third.stdout).toContain("(the order desk remembers earlier runs: cancelled already: 1002;");
      expect(third.stdout).toContain(
        "◆ answer: I looked up order 1002: Order 1002 for Grace: 1 x 27-inch monitor (MN-27). Status: cancelled (requested by the customer).",
      );
      expect(uuid.exec(third.stdout)![1]).not.toBe(sessionId);
    },
  );

  it("starts anew with --new, and a declined offer is not made again", async () => {
    const db = newDb();
    const env = { ORDER_SUPPORT_DB: db };
    const first = startChild(demoScript, ["--ask"], env);
    await first.waitFor("? Approve cancel_order");
    const waiting = uuid.exec(first.stdout())![1]!;
    await first.kill("SIGKILL");

    const second = startChild(demoScript, ["--ask", "look up order 1001"], env);
    await second.waitFor("? Continue it? [Y/n]");
    second.answer("n");
    await second.waitFor("◆ answer: I looked up order 1001");
    expect((await second.exited).code).toBe(0);
    expect(second.stdout()).toContain("a new session instead; that one stays as it is and is not offered again");
    expect(uuid.exec(second.stdout().split("a new session instead")[1]!)![1]).not.toBe(waiting);

    const third = await runToEnd(demoScript, ["look up order 1001"], env);
    expect(third.code).toBe(0);
    expect(third.stdout).not.toContain(waiting);
    // The session declined is still in the store, waiting; nothing ran at the desk.
    const events = await eventsOf(db, waiting);
    expect(events.at(-1)?.type).toBe("interrupt_created");
    expect(deskCalls(db).calls).toEqual([]);
  });

  it("refuses an unknown --store and a file that is not a store, with a message and no stack trace", async () => {
    const db = newDb();
    const unknown = await runToEnd(demoScript, ["--store", "redis"], { ORDER_SUPPORT_DB: db });
    expect(unknown.code).toBe(2);
    expect(unknown.stderr).toContain('--store must be one of sqlite, memory, not "redis"');
    expect(unknown.stdout).toBe("");
    const viaEnv = await runToEnd(demoScript, [], { ORDER_SUPPORT_DB: db, ORDER_SUPPORT_STORE: "sqlite3" });
    expect(viaEnv.code).toBe(2);
    expect(viaEnv.stderr).toContain('ORDER_SUPPORT_STORE must be one of sqlite, memory, not "sqlite3"');

    const { writeFileSync, readFileSync, existsSync } = await import("node:fs");
    writeFileSync(db, "these are my notes, not a database\n".repeat(200));
    const notAStore = await runToEnd(demoScript, [], { ORDER_SUPPORT_DB: db });
    expect(notAStore.code).toBe(1);
    expect(notAStore.stderr).toBe(`demo failed: "${db}" is not a SQLite database; it was left untouched\n`);
    expect(readFileSync(db, "utf8")).toBe("these are my notes, not a database\n".repeat(200));
    expect(existsSync(deskFileFor(db))).toBe(false);

    const noFolder = await runToEnd(demoScript, [], { ORDER_SUPPORT_DB: `${temp!.dir}/missing/demo.db` });
    expect(noFolder.code).toBe(1);
    expect(noFolder.stderr).toContain(`but the folder ${temp!.dir}/missing does not exist`);
    expect(noFolder.stderr).not.toMatch(/^\s+at /m);
  });

  it("keeps the old in-memory behaviour with --store memory: no file is written", async () => {
    const db = newDb();
    const run = await runToEnd(demoScript, ["--store", "memory", "--yes", "cancel order 1002"], {
      ORDER_SUPPORT_DB: db,
    });
    expect(run.code).toBe(0);
    expect(run.stdout).toContain("store: in memory)");
    expect(run.stdout).toContain("orders cancelled: 1002; cancel calls on the desk: 1");
    const { readdirSync } = await import("node:fs");
    expect(readdirSync(temp!.dir)).toEqual([]);
    expect(storeSideFile(db, "demo-sessions.json")).toMatch(/demo\.demo-sessions\.json$/);
  });
});
