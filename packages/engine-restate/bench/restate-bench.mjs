// What running a session on Restate costs per step, next to a bare Restate handler that runs the
// same number of ctx.run steps with the same payload sizes, measured in the same run (the two are
// interleaved turn by turn, so a change in the machine's load hits both), as the history grows.
//
//   pnpm --filter @durable-agents/engine-restate build
//   node packages/engine-restate/bench/restate-bench.mjs [--quick] [--out figures.json]
//
// The workload: core's ScriptedRunner with one real tool (`look_up`, a sha256 of its key); a turn is
// `call look_up` / then / `call look_up`: model, tool, model, tool, model = 5 steps. A turn's time
// runs from the moment its message is sent to the moment the client following the session's events
// sees `turn_completed`; a bare turn's from the ingress request to its answer. Per step = turn / 5.
// Journal bytes per step: the drive invocation's journal (`sys_journal`, kept for the benchmark with
// `journalRetention`), over its 5 steps. Sizes: the history is filled with one-model-step turns up
// to each size (10, 100, 1,000 items; --quick: 10, 100), then 12 turns of each variant are timed.
import { createHash } from "node:crypto";
import { writeFileSync } from "node:fs";
import http2 from "node:http2";
import { cpus, loadavg, totalmem } from "node:os";
import { defineSession, SessionClient } from "@durable-agents/core";
import { ScriptedRunner } from "@durable-agents/core/testing";
import * as restate from "@restatedev/restate-sdk";
import { RestateSessionStore, restateSessions } from "@durable-agents/engine-restate";
import {
  freePort,
  queryRestate,
  quietLogger,
  registerDeployment,
  startRestateServer,
} from "@durable-agents/engine-restate/testing";

const args = process.argv.slice(2);
const quick = args.includes("--quick");
const out = args.includes("--out") ? args[args.indexOf("--out") + 1] : null;
const sizes = quick ? [10, 100] : [10, 100, 1000];
const timedTurns = quick ? 6 : 12;
const stepsPerTurn = 5;

const median = (values) => {
  const sorted = [...values].sort((a, b) => a - b);
  const mid = Math.floor(sorted.length / 2);
  return sorted.length % 2 ? sorted[mid] : (sorted[mid - 1] + sorted[mid]) / 2;
};

const runner = new ScriptedRunner({
  tools: [
    {
      name: "look_up",
      description: "Looks a key up.",
      parameters: { key: "string" },
      execute: ({ key }) => createHash("sha256").update(String(key)).digest("hex"),
    },
  ],
});
const definition = defineSession({ name: "bench", runner, policies: { look_up: { effect: "read" } } });

// The bare handler: `steps` ctx.run steps in one invocation, each returning a payload of the given size.
const bare = restate.object({
  name: "benchBareSteps",
  handlers: {
    run: async (ctx, req) => {
      for (const size of req.sizes) await ctx.run("step", () => "x".repeat(size));
      return req.sizes.length;
    },
  },
  options: { journalRetention: 0 },
});

const server = await startRestateServer();
try {
  const prefix = `bench${Date.now().toString(36)}`;
  const engine = restateSessions({
    sessions: [definition],
    ingressUrl: server.ingressUrl,
    prefix,
    engineOptions: { journalRetention: { hours: 1 } },
  });
  const endpoint = http2.createServer(
    restate.createEndpointHandler({ services: [...engine.services, bare], logger: quietLogger }),
  );
  const port = await freePort();
  await new Promise((resolve) => endpoint.listen(port, "127.0.0.1", resolve));
  await registerDeployment(server.adminUrl, `http://127.0.0.1:${port}`);
  const store = new RestateSessionStore({ url: server.ingressUrl, prefix });
  const client = new SessionClient({ store });

  const turnMessage = (i) => `call look_up {"key":"a${i}"}\nthen\ncall look_up {"key":"b${i}"}`;

  /** Sends a message and waits until the following client sees the turn end; ms. */
  async function timedTurn(sessionId, text) {
    const { lastEventSeq } = await client.snapshot(sessionId);
    const abort = new AbortController();
    const started = performance.now();
    await client.sendMessage(sessionId, text);
    for await (const event of client.followEvents(sessionId, { after: lastEventSeq, signal: abort.signal })) {
      if (event.type === "turn_completed" || event.type === "turn_failed") break;
    }
    const ms = performance.now() - started;
    abort.abort();
    return ms;
  }

  async function driveJournal(sessionId) {
    const rows = await queryRestate(
      server.adminUrl,
      `SELECT i.id AS id, sum(j.raw_length) AS bytes, count(*) AS entries FROM sys_journal j JOIN sys_invocation i ON j.id = i.id
       WHERE i.target_service_name = '${engine.names.engine}' AND i.target_service_key = '${sessionId}'
       GROUP BY i.id, i.created_at ORDER BY i.created_at DESC LIMIT 1`,
    );
    return rows[0] ? { bytes: Number(rows[0].bytes), entries: Number(rows[0].entries) } : null;
  }

  async function runPayloadSizes(sessionId) {
    const rows = await queryRestate(
      server.adminUrl,
      `SELECT j.raw_length AS bytes FROM sys_journal j JOIN sys_invocation i ON j.id = i.id
       WHERE i.target_service_name = '${engine.names.engine}' AND i.target_service_key = '${sessionId}'
       AND j.entry_type = 'Notification: Run' AND i.created_at = (SELECT max(created_at) FROM sys_invocation
       WHERE target_service_name = '${engine.names.engine}' AND target_service_key = '${sessionId}')
       ORDER BY j.index`,
    );
    // The 5 step results (the clock reads are a few bytes and come first).
    return rows
      .map((r) => Number(r.bytes))
      .filter((bytes) => bytes > 40)
      .slice(-stepsPerTurn);
  }

  const { sessionId } = await client.startSession({ agent: "bench" });
  let history = 0;
  const rows = [];
  for (const size of sizes) {
    while (history < size) {
      await client.sendMessage(sessionId, `fill ${history}`);
      await client.waitUntilIdle(sessionId);
      history = (await client.snapshot(sessionId)).messages.length;
    }
    // One warm-up turn, which also gives the payload sizes the bare handler returns.
    await timedTurn(sessionId, turnMessage(`w${size}`));
    const sizesOfSteps = await runPayloadSizes(sessionId);
    const engineMs = [];
    const bareMs = [];
    const journals = [];
    for (let i = 0; i < timedTurns; i++) {
      engineMs.push(await timedTurn(sessionId, turnMessage(`${size}-${i}`)));
      journals.push(await driveJournal(sessionId));
      const started = performance.now();
      await store.ingress.call("benchBareSteps", `bare-${size}`, "run", { sizes: sizesOfSteps });
      bareMs.push(performance.now() - started);
    }
    history = (await client.snapshot(sessionId)).messages.length;
    const perStep = median(engineMs) / stepsPerTurn;
    const barePerStep = median(bareMs) / stepsPerTurn;
    const journalPerStep = median(journals.map((j) => j?.bytes ?? 0)) / stepsPerTurn;
    rows.push({
      historyItems: size,
      perStepMs: perStep,
      barePerStepMs: barePerStep,
      ratio: perStep / barePerStep,
      journalBytesPerStep: journalPerStep,
      journalEntriesPerTurn: median(journals.map((j) => j?.entries ?? 0)),
      stepPayloadBytes: sizesOfSteps,
    });
  }
  const base = rows[0];
  console.log("history  per step (ms)  bare per step (ms)  ratio  vs 10 items  journal B/step  vs 10 items");
  for (const row of rows) {
    console.log(
      [
        String(row.historyItems).padStart(7),
        row.perStepMs.toFixed(2).padStart(14),
        row.barePerStepMs.toFixed(2).padStart(19),
        row.ratio.toFixed(2).padStart(6),
        `${((row.perStepMs / base.perStepMs - 1) * 100).toFixed(0)} %`.padStart(12),
        row.journalBytesPerStep.toFixed(0).padStart(15),
        `${((row.journalBytesPerStep / base.journalBytesPerStep - 1) * 100).toFixed(0)} %`.padStart(12),
      ].join(""),
    );
  }
  const figures = {
    benchmark: "engine-restate per step vs a bare Restate handler",
    quick,
    machine: {
      cpu: cpus()[0]?.model,
      cores: cpus().length,
      memory: totalmem(),
      node: process.version,
      load: loadavg(),
    },
    restate: await (await fetch(`${server.adminUrl}/version`)).json(),
    rows,
  };
  if (out) writeFileSync(out, `${JSON.stringify(figures, null, 2)}\n`);
  await store.close();
  await new Promise((resolve) => endpoint.close(resolve));
} finally {
  await server.stop();
}
