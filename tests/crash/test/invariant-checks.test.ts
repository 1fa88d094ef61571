/**
 * The checks themselves can fail: a small real run (one worker process) is loaded from the
 * database, then copies of its rows are broken in one way each, and the checks must name each
 * break. The comparison is with the unbroken rows' own findings, so this test is about the checks.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createTestDatabase, type TestDatabase } from "@durable-agents/store-postgres/testing";
import { checkInvariants, runCrashScenario, type CrashRunResult, type RunData } from "../src/index.js";

let database: TestDatabase;
let run: CrashRunResult;

beforeAll(async () => {
  database = await createTestDatabase();
  run = await runCrashScenario({
    databaseUrl: database.connectionString,
    sessions: 12,
    workers: 1,
    kills: 0,
    seed: 5,
    failureRate: 0,
    timeoutMs: 60_000,
  });
}, 90_000);
afterAll(async () => {
  await database?.drop();
});

function copy(data: RunData): RunData {
  return structuredClone(data);
}

/** The violations the broken copy adds to those of the rows as they were. */
function added(broken: RunData): string[] {
  const options = { plan: run.plan, workers: run.workers };
  const before = new Set(checkInvariants(run.data, options).violations);
  return checkInvariants(broken, options).violations.filter((v) => !before.has(v));
}

function execution(tool: string) {
  const found = run.data.executions.find((e) => e.tool === tool && e.result === "ok");
  if (!found) throw new Error(`the run has no successful ${tool} execution to break`);
  return found;
}

describe("the invariant checks", () => {
  it("find a single-attempt call executed twice", () => {
    const data = copy(run.data);
    const once = execution("non_idempotent_write_auto");
    data.executions.push({ ...once, id: 1e9 });
    expect(added(data).join("\n")).toContain(`single-attempt call ${once.toolCallId} executed 2 times`);
  });

  it("find a read executed more than three times", () => {
    const data = copy(run.data);
    const read = execution("read");
    for (let n = 0; n < 3; n++) data.executions.push({ ...read, id: 1e9 + n, attempt: read.attempt + n + 1 });
    const found = added(data).join("\n");
    expect(found).toContain(`read call ${read.toolCallId} executed 4 times (at most 3)`);
    expect(found).toContain("whose start was never committed");
  });

  it("find an idempotent write that saw another key", () => {
    const data = copy(run.data);
    const write = data.executions.find((e) => e.tool === "idempotent_write")!;
    (write as { idempotencyKey: string }).idempotencyKey = "someone-else/turn-1/x";
    expect(added(data).join("\n")).toMatch(/idempotent write .* saw key\(s\) someone-else\/turn-1\/x/);
  });

  it("find overlapping executions of one session by two workers", () => {
    const data = copy(run.data);
    const first = data.executions[0]!;
    data.executions.push({ ...first, id: 1e9, toolCallId: `${first.toolCallId}`, workerPid: 1, attempt: 99 });
    expect(added(data).join("\n")).toContain(`while worker 1 ran`);
  });

  it("find a gap in a session's event seqs and a lost message", () => {
    const data = copy(run.data);
    const [sessionId, events] = [...data.events.entries()][0]!;
    const index = events.findIndex((e) => e.type === "turn_started");
    events.splice(index, 1);
    const found = added(data).join("\n");
    expect(found).toContain(`${sessionId}: event seqs have a gap`);
    expect(found).toMatch(new RegExp(`${sessionId}: \\d+ accepted message\\(s\\) started \\d+ turn\\(s\\)`));
  });

  it("find a decision accepted twice and a session left waiting", () => {
    const data = copy(run.data);
    const [sessionId, inbox] = [...data.inbox.entries()].find(([, entries]) =>
      entries.some((e) => e.entry.kind === "resolution"),
    )!;
    const resolution = inbox.find((e) => e.entry.kind === "resolution")!;
    inbox.push({ ...resolution, seq: 999 });
    data.sessions.get(sessionId)!.head.status = "awaiting_approval";
    const found = added(data).join("\n");
    expect(found).toMatch(/has 2 accepted decision\(s\), not 1/);
    expect(found).toContain(`${sessionId}: ends awaiting_approval, not idle`);
  });

  it("find a call whose outcome is not what its tool did", () => {
    const data = copy(run.data);
    const write = data.executions.find((e) => e.tool === "idempotent_write" && e.result === "ok")!;
    (write as { result: string }).result = "error";
    expect(added(data).join("\n")).toContain(`call ${write.toolCallId} is recorded succeeded, but its attempt`);
  });
});
