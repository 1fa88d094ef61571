// Prints (does not assert) what one model step of the runner costs next to one raw SDK model
// call, at 10, 100 and 1,000 history items. Runs against the BUILT package (dist):
//   npx -y pnpm@12.4.2 --filter @durable-agents/openai-agents build
//   npx -y pnpm@12.4.2 --filter @durable-agents/openai-agents measure [rounds]
import { Agent, Runner, user } from "@openai/agents";
import { z } from "zod";
import { durableTool, OpenAIAgentsRunner } from "../dist/index.js";
import { ScriptedModel } from "../dist/testing/index.js";

const args = process.argv.slice(2).filter((arg) => arg !== "--");
const rounds = Number(args[0] ?? 25);
if (!Number.isInteger(rounds) || rounds < 1) {
  console.error(`usage: measure-steps.mjs [rounds], rounds a positive integer (got ${JSON.stringify(args[0])})`);
  process.exit(2);
}

function makeAgent() {
  const lookUp = durableTool({
    name: "look_up",
    description: "Look an order up.",
    parameters: z.object({ id: z.string() }),
    execute: ({ id }) => `order ${id} is shipped`,
  });
  return new Agent({ name: "orders", instructions: "Help with orders.", tools: [lookUp] });
}

const calls = (prefix, n) => Array.from({ length: n }, (_, i) => `call look_up {"id":"${prefix}-${i}"}`).join("\n");

/** A real history: turns of one response with k calls make 2k+2 items each. */
async function buildHistory(runner, items) {
  const history = [];
  let turn = 0;
  while (history.length < items) {
    const k = Math.min(49, (items - history.length - 2) / 2);
    const turnStart = history.length;
    history.push(runner.userItem("message", calls(`t${turn}`, k)));
    const first = await runner.runModel(stepInput(history, turnStart, null, []));
    const outcomes = first.calls.map((c) => ({
      toolCallId: c.toolCallId,
      name: c.name,
      status: "succeeded",
      text: `order of ${c.arguments} is shipped`,
      output: "x",
    }));
    const last = await runner.runModel(stepInput(history, turnStart, first.runState, outcomes));
    if (last.kind !== "final") throw new Error("history turn did not end");
    history.push(...last.items);
    turn++;
  }
  if (history.length !== items) throw new Error(`built ${history.length} items, wanted ${items}`);
  return history;
}

function stepInput(history, turnStart, runState, outcomes) {
  return {
    sessionId: "m",
    turnId: `t${turnStart}`,
    modelStep: 1,
    history,
    turnStart,
    runState,
    outcomes,
    signal: new AbortController().signal,
    emit: () => {},
  };
}

const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];
const ok = (call) => [{ toolCallId: call.toolCallId, name: call.name, status: "succeeded", text: "ok", output: "ok" }];

async function level(items) {
  const runner = new OpenAIAgentsRunner(makeAgent(), { model: new ScriptedModel() });
  // A second runner of the same agent: it never saw the state, as another process (the decoding path).
  const other = new OpenAIAgentsRunner(makeAgent(), { model: new ScriptedModel(), liveRunStates: 0 });
  const stored = await buildHistory(runner, items);
  const sdk = new Runner({ model: new ScriptedModel(), tracingDisabled: true });
  const plain = makeAgent();
  const t = { first: [], resumed: [], resumedOther: [], raw: [] };
  let chars = 0;
  for (let round = 0; round <= rounds; round++) {
    const history = [
      ...stored,
      runner.userItem("message", `call look_up {"id":"a${round}"}\nthen\ncall look_up {"id":"b${round}"}`),
    ];
    const turnStart = stored.length;
    let start = performance.now();
    const first = await runner.runModel(stepInput(history, turnStart, null, []));
    const firstMs = performance.now() - start;
    chars = first.runState.length;
    start = performance.now();
    const second = await runner.runModel(stepInput(history, turnStart, first.runState, ok(first.calls[0])));
    const resumedMs = performance.now() - start;
    // As read from a store by another process: new objects, whose JSON nobody computed yet.
    const otherHistory = structuredClone(history);
    start = performance.now();
    const secondOther = await other.runModel(stepInput(otherHistory, turnStart, first.runState, ok(first.calls[0])));
    const otherMs = performance.now() - start;
    if (second.kind !== "tool_calls" || secondOther.kind !== "tool_calls" || second.runState !== secondOther.runState) {
      throw new Error("the two resumed steps differ");
    }
    // Finish the turn (not timed), so the runner holds no live state of it afterwards.
    const third = await runner.runModel(stepInput(history, turnStart, second.runState, ok(second.calls[0])));
    if (third.kind !== "final") throw new Error("the turn did not end");
    start = performance.now();
    const result = await sdk.run(plain, [...stored.map((e) => e.item), user(`hello ${round}`)], { stream: true });
    for await (const _event of result) {
      // drained
    }
    await result.completed;
    const rawMs = performance.now() - start;
    if (round > 0) {
      t.first.push(firstMs);
      t.resumed.push(resumedMs);
      t.resumedOther.push(otherMs);
      t.raw.push(rawMs);
    }
  }
  return {
    items,
    first: median(t.first),
    resumed: median(t.resumed),
    resumedOther: median(t.resumedOther),
    raw: median(t.raw),
    chars,
  };
}

console.log(`node ${process.version}, ${rounds} rounds after one warm-up, medians in ms`);
console.log(
  "| history items | first step | resumed step (same runner) | resumed step (other runner) | raw SDK call | run state chars |",
);
console.log("| --- | --- | --- | --- | --- | --- |");
for (const items of [10, 100, 1000]) {
  const r = await level(items);
  const f = (x) => x.toFixed(2);
  console.log(`| ${r.items} | ${f(r.first)} | ${f(r.resumed)} | ${f(r.resumedOther)} | ${f(r.raw)} | ${r.chars} |`);
}
