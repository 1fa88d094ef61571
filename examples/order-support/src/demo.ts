/**
 * `pnpm demo`: one order support session in the terminal, on the embedded memory store.
 *
 *   node dist/demo.js [--framework openai-agents|ai-sdk] [--yes | --reject "<message>"] [message ...]
 *
 * Without messages it runs "look up order 1001", then "cancel order 1002". The cancellation waits
 * for approval: asked at the terminal on a TTY, approved automatically when stdin is not a TTY or
 * with --yes, rejected with --reject. `--framework ai-sdk` runs the same agent on the Vercel AI SDK.
 */
import { parseArgs } from "node:util";
import { approveAutomatically, askOnTerminal, rejectAutomatically, type ApprovalDecider } from "./approval-deciders.js";
import { orderSupportFrameworks, parseOrderSupportFramework, type OrderSupportFramework } from "./order-support-framework.js";
import { startOrderSupportRuntime } from "./order-support-runtime.js";
import { orderSupportAgentName } from "./order-support-session.js";
import { orderSupportSetupFromEnv } from "./order-support-setup.js";
import { ProgressRenderer } from "./progress-renderer.js";
import { runTerminalDemo } from "./run-terminal-demo.js";

const defaultConversation = ["look up order 1001", "cancel order 1002"];
const usage = `usage: demo [--framework <name>] [--yes | --reject "<message>"] [--timeout <seconds>] [message ...]
  --framework <name>  ${orderSupportFrameworks.join(" or ")} (default openai-agents)
  --yes, -y           approve every tool call that needs approval
  --reject <message>  reject every such call, telling the model <message>
  --timeout <s>       give up after this many seconds (default: 120 when nobody is asked, none otherwise)
Without messages: ${defaultConversation.map((m) => `"${m}"`).join(", then ")}.`;

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
        timeout: { type: "string" },
        framework: { type: "string" },
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
  if (values.yes && values.reject !== undefined) {
    console.error(`--yes and --reject exclude each other\n${usage}`);
    return 2;
  }
  const interactive = process.stdin.isTTY === true && !values.yes && values.reject === undefined;
  // Nobody waits for a person's answer to time out; unattended runs stop after 120 s by default.
  const timeoutSeconds = values.timeout !== undefined ? Number(values.timeout) : interactive ? null : 120;
  if (timeoutSeconds !== null && !(timeoutSeconds > 0)) {
    console.error(`--timeout needs a positive number of seconds\n${usage}`);
    return 2;
  }
  let framework: OrderSupportFramework;
  try {
    framework = parseOrderSupportFramework(values.framework, "--framework");
  } catch (error) {
    console.error(`${error instanceof Error ? error.message : String(error)}\n${usage}`);
    return 2;
  }
  const messages = positionals.length > 0 ? positionals : defaultConversation;

  let decide: ApprovalDecider;
  if (values.reject !== undefined) decide = rejectAutomatically(values.reject.trim() === "" ? null : values.reject, "rejected (--reject)");
  else if (values.yes) decide = approveAutomatically("approved (--yes)");
  else if (interactive) decide = askOnTerminal(process.stdin, process.stdout);
  else decide = approveAutomatically("approved automatically (stdin is not a TTY)");

  const setup = orderSupportSetupFromEnv(framework, process.env);
  const live = process.stdout.isTTY === true;
  const renderer = new ProgressRenderer({ write: (text) => process.stdout.write(text) }, {
    live,
    color: live && !process.env.NO_COLOR,
    ...(process.stdout.columns ? { columns: process.stdout.columns } : {}),
  });
  renderer.line(`order support demo (framework: ${setup.framework}; model: ${setup.modelDescription}; store: in memory)`);

  const runtime = startOrderSupportRuntime({ session: setup.createSession });
  const timeout = timeoutSeconds === null ? undefined : AbortSignal.timeout(timeoutSeconds * 1000);
  try {
    const result = await runTerminalDemo({
      client: runtime.client,
      agent: orderSupportAgentName,
      messages,
      decide,
      renderer,
      ...(timeout ? { signal: timeout } : {}),
    });
    const snapshot = await runtime.client.snapshot(result.sessionId);
    const cancellations = runtime.desk.cancellations();
    renderer.line(
      `done: ${result.turns.length} turn(s), ${snapshot.usage.modelCalls} model call(s), ${snapshot.usage.totalTokens} tokens; ` +
        `orders cancelled: ${cancellations.length === 0 ? "none" : cancellations.map((c) => c.orderId).join(", ")}`,
    );
    return result.turns.every((turn) => turn.status === "completed") ? 0 : 1;
  } finally {
    await runtime.stop();
  }
}

main().then(
  (code) => process.exit(code),
  (error: unknown) => {
    console.error(`demo failed: ${error instanceof Error ? error.message : String(error)}`);
    process.exit(1);
  },
);
