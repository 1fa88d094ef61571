/**
 * The agents of the rolling-deploy suite, in two versions: built the same way in the worker
 * processes and in the test (which needs their fingerprints and pins the sessions it starts), so the
 * suite also shows that a definition has the same fingerprint in every process.
 *
 * - `deploy`: `look_up_order` (read) and `cancel_order` (non-idempotent write, needs approval); in
 *   v2 `cancel_order` also requires a `reason` (a new argument schema: another definition).
 * - `billing`: `refund` (non-idempotent write, needs approval); in v2 it also requires an `amount`.
 *
 * With `migrate`, v2's `deploy` registers a migration from v1's `deploy`: the pending calls get the
 * reason `migrated`. `billing` has no migration in any build. Every execution is reported, with the
 * version that ran it.
 */
import { defineSession, type SessionDefinition } from "@durable-agents/core";
import { ScriptedRunner, type ConformanceTool } from "@durable-agents/core/testing";

export type DeployVersion = "v1" | "v2";

export interface DeployExecution {
  readonly agent: string;
  readonly tool: string;
  readonly version: DeployVersion;
  readonly args: Record<string, unknown>;
}

export interface DeployAgentsOptions {
  /** v2 only: register the migration of `deploy` from v1. */
  readonly migrate?: boolean;
  readonly onExecute?: (execution: DeployExecution) => void;
}

const tool = (
  agent: string,
  version: DeployVersion,
  name: string,
  parameters: ConformanceTool["parameters"],
  answer: (args: Record<string, unknown>) => string,
  report: DeployAgentsOptions["onExecute"],
): ConformanceTool => ({
  name,
  description: `${name} (${agent} ${version})`,
  parameters,
  execute: (args) => {
    report?.({ agent, tool: name, version, args });
    return answer(args);
  },
});

export function deployAgents(version: DeployVersion, options: DeployAgentsOptions = {}): SessionDefinition[] {
  const report = options.onExecute;
  const v2 = version === "v2";
  const deployTools = [
    tool(
      "deploy",
      version,
      "look_up_order",
      { order_id: "string" },
      (a) => `order ${a.order_id} is shipped (${version})`,
      report,
    ),
    tool(
      "deploy",
      version,
      "cancel_order",
      v2 ? { order_id: "string", reason: "string" } : { order_id: "string" },
      (a) => `order ${a.order_id} is cancelled by ${version}${v2 ? ` (${a.reason})` : ""}`,
      report,
    ),
  ];
  const billingTools = [
    tool(
      "billing",
      version,
      "refund",
      v2 ? { invoice_id: "string", amount: "number" } : { invoice_id: "string" },
      (a) => `invoice ${a.invoice_id} is refunded by ${version}`,
      report,
    ),
  ];
  const v1Deploy = version === "v1" ? null : deployAgents("v1")[0]!;
  const deploy = defineSession({
    name: "deploy",
    runner: new ScriptedRunner({ tools: deployTools }),
    policies: { look_up_order: { effect: "read" }, cancel_order: { effect: "non_idempotent_write" } },
    ...(v1Deploy && options.migrate
      ? {
          migrations: [
            {
              from: v1Deploy.fingerprint,
              transform: ({ head }) => {
                const withReason = (args: string) => JSON.stringify({ ...JSON.parse(args), reason: "migrated" });
                for (const call of head.turn?.calls ?? []) {
                  if (call.name === "cancel_order") call.arguments = withReason(call.arguments);
                }
                for (const interrupt of head.pendingInterrupts) {
                  if (interrupt.toolName === "cancel_order") interrupt.arguments = withReason(interrupt.arguments);
                }
                return { head };
              },
            },
          ],
        }
      : {}),
  });
  const billing = defineSession({
    name: "billing",
    runner: new ScriptedRunner({ tools: billingTools }),
    policies: { refund: { effect: "non_idempotent_write" } },
  });
  return [deploy, billing];
}
