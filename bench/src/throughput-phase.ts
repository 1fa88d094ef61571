/**
 * Throughput: many sessions at once on store-postgres, driven by 1, 2 or 4 worker processes; the
 * completed steps per second from the first lease to the last turn's end.
 */
import { fork, type ChildProcess } from "node:child_process";
import { cpus } from "node:os";
import { fileURLToPath } from "node:url";
import pg from "pg";
import { SessionClient } from "@durable-agents/core";
import { PostgresStore, migrate } from "@durable-agents/store-postgres";
import type { ChildMessage } from "./throughput-worker.js";
import { AGENT_NAME, stepsPerTurn, turnScript } from "./workload.js";

export interface ThroughputResult {
  readonly processes: number;
  readonly sessions: number;
  readonly steps: number;
  readonly seconds: number;
  readonly stepsPerSecond: number;
  /** CPU time of the worker processes, in core-seconds per second of the run. */
  readonly workerCpuCores: number;
  /** Busy share of the whole machine's cores during the run (every process, PostgreSQL included), 0..1. */
  readonly machineBusy: number;
}

export interface ThroughputOptions {
  readonly connectionString: string;
  readonly processes: number;
  readonly sessions: number;
  readonly turns: number;
  readonly toolCalls: number;
  /** Sessions one worker process drives at once. */
  readonly concurrency: number;
}

const workerPath = fileURLToPath(new URL("./throughput-worker.js", import.meta.url));

function cpuTimes(): { busy: number; total: number } {
  let busy = 0;
  let total = 0;
  for (const cpu of cpus()) {
    const t = cpu.times;
    const all = t.user + t.nice + t.sys + t.idle + t.irq;
    total += all;
    busy += all - t.idle;
  }
  return { busy, total };
}

export async function runThroughput(options: ThroughputOptions): Promise<ThroughputResult> {
  const schema = `bench_tp${options.processes}`;
  const pool = new pg.Pool({ connectionString: options.connectionString, max: 4 });
  pool.on("error", () => {});
  const store = new PostgresStore({ pool, schema });
  const children: ChildProcess[] = [];
  try {
    await migrate(pool, { schema });
    const client = new SessionClient({ store, agents: [AGENT_NAME] });
    // Every session gets all its turns' messages up front: they queue and run in order.
    for (let s = 0; s < options.sessions; s++) {
      const sessionId = `tp${options.processes}-s${s}`;
      await client.startSession({ agent: AGENT_NAME, sessionId, message: turnScript(sessionId, 1, options.toolCalls) });
      for (let t = 2; t <= options.turns; t++) await client.sendMessage(sessionId, turnScript(sessionId, t, options.toolCalls));
    }
    const stopped: Promise<{ cpuMs: number; modelCalls: number }>[] = [];
    const ready: Promise<void>[] = [];
    for (let p = 0; p < options.processes; p++) {
      const child = fork(workerPath, [options.connectionString, schema, String(options.concurrency)], { stdio: ["ignore", "inherit", "inherit", "ipc"] });
      children.push(child);
      ready.push(
        new Promise((resolve, reject) => {
          child.on("message", (message: ChildMessage) => {
            if (message.type === "ready") resolve();
          });
          child.once("exit", (code) => reject(new Error(`worker process exited early (${code})`)));
        }),
      );
      stopped.push(
        new Promise((resolve, reject) => {
          child.on("message", (message: ChildMessage) => {
            if (message.type === "stopped") resolve(message);
            if (message.type === "error") reject(new Error(`worker process: ${message.message}`));
          });
        }),
      );
    }
    await Promise.all(ready);
    const expectedTurns = options.sessions * options.turns;
    const cpuStart = cpuTimes();
    const start = performance.now();
    for (const child of children) child.send({ type: "go" });
    let end = start;
    for (;;) {
      const result = await pool.query<{ n: string }>(`SELECT count(*)::text AS n FROM ${schema}.events WHERE type IN ('turn_completed', 'turn_failed')`);
      if (Number(result.rows[0]!.n) >= expectedTurns) {
        end = performance.now();
        break;
      }
      if (performance.now() - start > 300_000) throw new Error("the throughput run did not finish within 5 minutes");
      await new Promise((resolve) => setTimeout(resolve, 20));
    }
    const cpuEnd = cpuTimes();
    for (const child of children) child.send({ type: "stop" });
    const reports = await Promise.all(stopped);
    const counted = await pool.query<{ steps: string; failed: string }>(
      `SELECT count(*) FILTER (WHERE type = 'step_completed' AND data->>'step' IN ('RunModel', 'CallTool'))::text AS steps,
              count(*) FILTER (WHERE type = 'turn_failed')::text AS failed
       FROM ${schema}.events`,
    );
    const steps = Number(counted.rows[0]!.steps);
    if (Number(counted.rows[0]!.failed) > 0) throw new Error(`${counted.rows[0]!.failed} turns failed in the throughput run`);
    const expectedSteps = expectedTurns * stepsPerTurn(options.toolCalls);
    if (steps !== expectedSteps) throw new Error(`the throughput run completed ${steps} steps, expected ${expectedSteps}`);
    const seconds = (end - start) / 1000;
    const cpuMs = reports.reduce((sum, r) => sum + r.cpuMs, 0);
    return {
      processes: options.processes,
      sessions: options.sessions,
      steps,
      seconds,
      stepsPerSecond: steps / seconds,
      workerCpuCores: cpuMs / 1000 / seconds,
      machineBusy: (cpuEnd.busy - cpuStart.busy) / Math.max(1, cpuEnd.total - cpuStart.total),
    };
  } finally {
    for (const child of children) if (child.exitCode === null && child.signalCode === null) child.kill();
    await store.close();
    await pool.end();
  }
}
