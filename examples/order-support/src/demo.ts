/**
 * `pnpm demo`: one order support session in the terminal, kept in a SQLite file so that it
 * survives the process.
 *
 *   node dist/demo.js [--framework openai-agents|ai-sdk] [--store sqlite|memory] [--new]
 *                     [--yes | --reject "<message>" | --ask] [--timeout <s>] [message ...]
 *
 * Without messages it runs "look up order 1001", "where is the parcel of order 1001?", "cancel order
 * 1002" and "release the stock of order 1002". The parcel and the stock are the warehouse's: an MCP
 * server the demo starts over stdio (`warehouse.ts`). The cancellation and the release wait
 * for approval: asked at the terminal on a TTY (or with --ask), approved automatically when stdin
 * is not a TTY or with --yes, rejected with --reject. A session an earlier run left unfinished
 * (stopped at the approval question, say) is offered first and continued where it stands.
 * `--framework ai-sdk` runs the same agent on the Vercel AI SDK.
 *
 * Ctrl-C during a turn cancels that turn: the demo prints the turn's receipt (each call with its
 * effect and final status) and goes on with the next message. The next Ctrl-C, or a Ctrl-C while no
 * turn runs, stops the demo and keeps the session for the next run; one more does not wait for the
 * worker's steps in flight. SIGTERM stops the demo the same way.
 *
 *   ORDER_SUPPORT_DB     the session file (default: .durable-agents/demo.db in this example's folder)
 *   ORDER_SUPPORT_STORE  sqlite (default) or memory; --store wins
 *   ORDER_SUPPORT_LOOKUP_DELAY_MS  each look-up waits this long (default 0): time to press Ctrl-C
 */
import { randomUUID } from "node:crypto";
import { dirname } from "node:path";
import { parseArgs } from "node:util";
import {
  approveAutomatically,
  askOnTerminal,
  askYesNo,
  rejectAutomatically,
  type ApprovalDecider,
} from "./approval-deciders.js";
import { DemoSessions, type DemoSessionRecord } from "./demo-sessions.js";
import {
  orderSupportFrameworks,
  parseOrderSupportFramework,
  type OrderSupportFramework,
} from "./order-support-framework.js";
import { startOrderSupportRuntime } from "./order-support-runtime.js";
import { orderSupportAgentName } from "./order-support-session.js";
import { orderSupportSetupFromEnv } from "./order-support-setup.js";
import {
  chooseOrderSupportStore,
  deskFileFor,
  displayPath,
  openOrderSupportStore,
  orderSupportStoreKinds,
  storeSideFile,
  type StoreChoice,
} from "./order-support-store.js";
import { ProgressRenderer } from "./progress-renderer.js";
import {
  describeProgress,
  readDemoSessionProgress,
  runTerminalDemo,
  TurnCanceller,
  type DemoSessionProgress,
} from "./run-terminal-demo.js";
import type { OrderSupportClient } from "./session-client-port.js";
import { connectWarehouse, warehouseReleases } from "./warehouse.js";

const defaultConversation = [
  "look up order 1001",
  "where is the parcel of order 1001?",
  "cancel order 1002",
  "release the stock of order 1002",
];
const usage = `usage: demo [--framework <name>] [--store <kind>] [--new] [--yes | --reject "<message>" | --ask] [--timeout <seconds>] [message ...]
  --framework <name>  ${orderSupportFrameworks.join(" or ")} (default openai-agents)
  --store <kind>      ${orderSupportStoreKinds.join(" or ")} (default sqlite: the file ORDER_SUPPORT_DB, or .durable-agents/demo.db)
  --new               start a new session even if an earlier one is waiting (it is not offered again)
  --yes, -y           approve every tool call that needs approval
  --reject <message>  reject every such call, telling the model <message>
  --ask               ask for each decision even when stdin is not a TTY (one answer per line)
  --timeout <s>       give up after this many seconds (default: 120 when nobody is asked, none otherwise)
Without messages: ${defaultConversation.map((m) => `"${m}"`).join(", then ")}.
Ctrl-C during a turn cancels it and prints its receipt; Ctrl-C again (or while no turn runs) stops the demo.`;

/** The demo stopped because the user asked it to (Ctrl-C, SIGTERM). */
class StoppedByUser extends Error {
  constructor(readonly signal: string) {
    super(`stopped by ${signal}`);
  }
}

async function main(): Promise<number> {
  let args;
  try {
    // `pnpm demo -- --yes` hands the demo a leading "--": drop it so the flags after it still count.
    const argv = process.argv.slice(2);
    args = parseArgs({
      args: argv[0] === "--" ? argv.slice(1) : argv,
      allowPositionals: true,
      options: {
        yes: { type: "boolean", short: "y" },
        reject: { type: "string" },
        ask: { type: "boolean" },
        timeout: { type: "string" },
        framework: { type: "string" },
        store: { type: "string" },
        new: { type: "boolean" },
        help: { type: "boolean", short: "h" },
      },
    });
  } catch (error) {
    console.error(`${error instanceof Error ? error.message : String(error)}\n${usage}`);
    return 2;
  }
  const { values, positionals } = args;
  if (values.help) {
    console.log(usage);
    return 0;
  }
  if ([values.yes, values.reject !== undefined, values.ask].filter(Boolean).length > 1) {
    console.error(`--yes, --reject and --ask exclude each other\n${usage}`);
    return 2;
  }
  const interactive =
    values.ask === true || (process.stdin.isTTY === true && !values.yes && values.reject === undefined);
  // Nobody waits for a person's answer to time out; unattended runs stop after 120 s by default.
  const timeoutSeconds = values.timeout !== undefined ? Number(values.timeout) : interactive ? null : 120;
  if (timeoutSeconds !== null && !(timeoutSeconds > 0)) {
    console.error(`--timeout needs a positive number of seconds\n${usage}`);
    return 2;
  }
  let framework: OrderSupportFramework;
  let storeChoice: StoreChoice;
  try {
    framework = parseOrderSupportFramework(values.framework, "--framework");
    storeChoice = chooseOrderSupportStore({ flag: values.store, env: process.env, program: "demo" });
  } catch (error) {
    console.error(`${error instanceof Error ? error.message : String(error)}\n${usage}`);
    return 2;
  }

  let decide: ApprovalDecider;
  if (values.reject !== undefined)
    decide = rejectAutomatically(values.reject.trim() === "" ? null : values.reject, "rejected (--reject)");
  else if (values.yes) decide = approveAutomatically("approved (--yes)");
  else if (interactive) decide = askOnTerminal(process.stdin, process.stdout);
  else decide = approveAutomatically("approved automatically (stdin is not a TTY)");

  const setup = orderSupportSetupFromEnv(framework, process.env);
  const opened = await openOrderSupportStore(storeChoice);
  // The warehouse keeps its releases next to the desk's file (in its own memory on the memory store).
  const warehouseState = storeChoice.kind === "sqlite" ? storeSideFile(storeChoice.path, "warehouse.json") : undefined;
  let warehouse;
  try {
    warehouse = await connectWarehouse(warehouseState ? { stateFile: warehouseState } : {});
  } catch (error) {
    await opened.close();
    throw error;
  }
  const live = process.stdout.isTTY === true;
  const renderer = new ProgressRenderer(
    { write: (text) => process.stdout.write(text) },
    {
      live,
      color: live && !process.env.NO_COLOR,
      ...(process.stdout.columns ? { columns: process.stdout.columns } : {}),
    },
  );
  renderer.line(
    `order support demo (framework: ${setup.framework}; model: ${setup.modelDescription}; store: ${opened.description})`,
  );
  renderer.line(
    `warehouse (an MCP server over stdio): ${warehouse
      .tools()
      .map((tool) => `${tool.name} (${tool.effect}, from its annotations)`)
      .join(", ")}`,
  );
  if (setup.lookUpDelayMs > 0)
    renderer.line(
      `(each look-up waits ${setup.lookUpDelayMs} ms: ORDER_SUPPORT_LOOKUP_DELAY_MS; press Ctrl-C during one to cancel its turn)`,
    );

  // The first Ctrl-C during a turn cancels the turn (the demo goes on); any other Ctrl-C, or SIGTERM,
  // stops the demo where it is, and the session stays in the store. One more does not wait for the
  // worker's step in flight.
  const stop = new AbortController();
  const canceller = new TurnCanceller();
  let cancelAsked = false;
  const onSignal = (signal: NodeJS.Signals) => {
    if (stop.signal.aborted) process.exit(130);
    if (signal !== "SIGINT" || cancelAsked) {
      stop.abort(new StoppedByUser(signal));
      return;
    }
    cancelAsked = true;
    canceller.cancel("Ctrl-C at the terminal").then(
      (turnId) => {
        if (stop.signal.aborted) return;
        if (turnId === null) stop.abort(new StoppedByUser(signal));
        else renderer.line(`  ■ Ctrl-C: cancelling ${turnId} (press Ctrl-C again to stop the demo)`);
      },
      (error: unknown) => {
        if (stop.signal.aborted) return;
        renderer.line(`  could not cancel the turn (${error instanceof Error ? error.message : String(error)})`);
        stop.abort(new StoppedByUser(signal));
      },
    );
  };
  process.on("SIGINT", onSignal);
  process.on("SIGTERM", onSignal);
  const timeout = timeoutSeconds === null ? null : AbortSignal.timeout(timeoutSeconds * 1000);
  const signal = timeout ? AbortSignal.any([stop.signal, timeout]) : stop.signal;

  // A shorter lease than the worker's default (15 s): a demo killed during a step is taken over by
  // the next run within 5 s. The worker renews it every third of that while a step runs.
  const runtime = startOrderSupportRuntime({
    session: setup.createSession,
    store: opened.store,
    desk: opened.desk,
    warehouse,
    leaseTtlMs: 5_000,
  });
  const record =
    storeChoice.kind === "sqlite" ? new DemoSessions(storeSideFile(storeChoice.path, "demo-sessions.json")) : null;
  let sessionId: string | null = null;
  try {
    // A session an earlier run of this framework left unfinished, newest first.
    let resume: { record: DemoSessionRecord; progress: DemoSessionProgress } | null = null;
    if (record) {
      const waiting = await findUnfinished(runtime.client, record, framework);
      if (waiting && values.new) {
        record.setState(waiting.record.sessionId, "set_aside");
        renderer.line(`(--new: session ${waiting.record.sessionId} stays as it is and is not offered again)`);
      } else if (waiting) {
        const state = describeProgress(waiting.progress, waiting.record.messages.length);
        const started = new Date(waiting.record.startedAt).toLocaleString();
        if (interactive) {
          renderer.line(`session ${waiting.record.sessionId} (started ${started}) is ${state.replace(/^it /, "")}`);
          const yes = await askYesNo(process.stdin, process.stdout, "  ? Continue it?", true, signal);
          if (yes) resume = waiting;
          else {
            record.setState(waiting.record.sessionId, "set_aside");
            renderer.line("  a new session instead; that one stays as it is and is not offered again");
          }
        } else {
          resume = waiting;
        }
        if (resume)
          renderer.line(
            `Resuming session ${waiting.record.sessionId}${interactive ? "" : ` (started ${started})`}: ${state}`,
          );
      }
    }

    const cancelledBefore = opened.desk.cancellations().map((c) => c.orderId);
    if (!resume && cancelledBefore.length > 0 && storeChoice.kind === "sqlite") {
      renderer.line(
        `(the order desk remembers earlier runs: cancelled already: ${cancelledBefore.join(", ")}; ` +
          `to start over, remove ${storeChoice.isDefault ? displayPath(dirname(storeChoice.path)) : displayPath(deskFileFor(storeChoice.path))})`,
      );
    }

    const messages = resume ? resume.record.messages : positionals.length > 0 ? positionals : defaultConversation;
    sessionId = resume ? resume.record.sessionId : randomUUID();
    if (!resume && record) {
      // Recorded before it exists: a crash right after creating it cannot leave it unknown.
      record.add({ sessionId, framework, messages, startedAt: new Date().toISOString(), state: "open" });
    }
    const result = await runTerminalDemo({
      client: runtime.client,
      agent: orderSupportAgentName,
      messages,
      decide,
      renderer,
      signal,
      canceller,
      ...(resume ? { resume: resume.progress } : { sessionId }),
    });
    record?.setState(result.sessionId, "finished");
    const snapshot = await runtime.client.snapshot(result.sessionId);
    const cancellations = opened.desk.cancellations();
    const calls = opened.desk.cancelCalls();
    const cancelledTurns = result.turns.filter((turn) => turn.status === "cancelled").length;
    renderer.line(
      `done: ${result.turns.length} turn(s)${cancelledTurns > 0 ? ` (${cancelledTurns} cancelled)` : ""}, ` +
        `${snapshot.usage.modelCalls} model call(s), ${snapshot.usage.totalTokens} tokens; ` +
        `orders cancelled: ${cancellations.length === 0 ? "none" : cancellations.map((c) => c.orderId).join(", ")}; ` +
        `cancel calls on the desk: ${calls.length}` +
        (warehouseState ? `; stock releases in the warehouse: ${warehouseReleases(warehouseState).length}` : ""),
    );
    // A turn the user cancelled is no failure.
    return result.turns.some((turn) => turn.status === "failed") ? 1 : 0;
  } catch (error) {
    const reason: unknown = stop.signal.aborted ? stop.signal.reason : undefined;
    if (reason instanceof StoppedByUser) {
      // Exit code 0: the user asked for the stop, and the session is kept (pnpm would report any
      // other code as a failed script).
      renderer.line("");
      const how = reason.signal === "SIGINT" ? "Ctrl-C" : reason.signal;
      if (sessionId === null) renderer.line(`stopped (${how})`);
      else if (storeChoice.kind === "memory")
        renderer.line(`stopped (${how}); session ${sessionId} was in memory and is gone`);
      else
        renderer.line(
          `stopped (${how}); session ${sessionId} is kept in ${opened.description}: run the demo again to continue it`,
        );
      return 0;
    }
    if (timeout?.aborted) throw new Error(`gave up after ${timeoutSeconds} s (--timeout)`);
    throw error;
  } finally {
    await runtime.stop();
    await warehouse.close();
    await opened.close();
  }
}

/** The newest session of the record, on this framework, whose conversation has not ended. */
async function findUnfinished(
  client: OrderSupportClient,
  record: DemoSessions,
  framework: OrderSupportFramework,
): Promise<{ record: DemoSessionRecord; progress: DemoSessionProgress } | null> {
  for (const entry of record.list().reverse()) {
    if (entry.state !== "open" || entry.framework !== framework) continue;
    let progress: DemoSessionProgress;
    try {
      progress = await readDemoSessionProgress(client, entry.sessionId);
    } catch (error) {
      // Recorded, but the process stopped before creating it.
      if ((error as { code?: unknown }).code === "session_not_found") {
        record.setState(entry.sessionId, "finished");
        continue;
      }
      throw error;
    }
    if (progress.turns.length >= entry.messages.length) {
      record.setState(entry.sessionId, "finished");
      continue;
    }
    return { record: entry, progress };
  }
  return null;
}

main().then(
  (code) => process.exit(code),
  (error: unknown) => {
    const message = error instanceof Error ? error.message : String(error);
    console.error(`demo failed: ${message}`);
    process.exit(1);
  },
);
