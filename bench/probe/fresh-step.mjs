// Probe (not part of the bench run): what a model step after a tool call costs the OpenAI Agents
// SDK in three ways, on the bench workload's turn (model, tool, model, tool, model), with the
// deterministic scripted model and a history of earlier turns:
//   raw    one SDK run over the whole turn, the tool run by the SDK: from the first tool body's end
//          to the second tool body's start (the SDK's handling of the result, the model call, and
//          what comes before the next tool), and from the second tool body's end to the run's end;
//   resume the tool gated (needsApproval), the run interrupted, the state approved and run again:
//          the time of that `run(agent, state)` (the gated tool's recorded output, the model call,
//          until the next interruption or the end) — what the adapter does today;
//   fresh  the same interruption, then a new run over the turn's items with the tool's result item
//          appended (no run state): what a resume without the SDK's resume path would cost.
// Medians of the 2nd and 3rd model steps over the rounds, the three ways in turns.
// usage: cd bench && ../node_modules/.bin/node probe/fresh-step.mjs [rounds=300] [history turns=3]
import { Agent, Runner, tool } from "@openai/agents";
import { z } from "zod";
import { ScriptedModel } from "@durable-agents/openai-agents/testing";
import { lookUp, turnScript } from "../dist/workload.js";

const [roundsArg = "300", turnsArg = "3"] = process.argv.slice(2);
const rounds = Number(roundsArg);
let mark = () => {};
const options = (needsApproval) => ({
  name: "look_up",
  description: "Look up a record by its key.",
  parameters: z.object({ key: z.string() }),
  needsApproval,
  execute: ({ key }) => {
    mark("start");
    const output = lookUp(key);
    mark("end");
    return output;
  },
});
const plain = new Agent({ name: "bench", instructions: "Look records up when asked.", tools: [tool(options(false))] });
const gated = new Agent({ name: "bench", instructions: "Look records up when asked.", tools: [tool(options(true))] });
const sdk = new Runner({ model: new ScriptedModel({ streamChunks: 3 }), tracingDisabled: true });
const user = (text) => ({ role: "user", content: text, type: "message" });
async function drain(result) {
  for await (const _ of result) {
  }
  await result.completed;
  return result;
}

// The history of earlier turns (run raw).
let history = [];
for (let i = 0; i < Number(turnsArg); i++) {
  const r = await drain(await sdk.run(plain, [...history, user(turnScript(`seed${i}`, 1, 2))], { stream: true }));
  history = r.history;
}

async function raw(key) {
  const marks = [];
  mark = (what) => marks.push([what, performance.now()]);
  const r = await drain(await sdk.run(plain, [...history, user(turnScript(key, 1, 2))], { stream: true }));
  const end = performance.now();
  mark = () => {};
  if (r.finalOutput === undefined) throw new Error("raw turn did not end");
  const ends = marks.filter(([w]) => w === "end").map(([, t]) => t);
  const starts = marks.filter(([w]) => w === "start").map(([, t]) => t);
  return [starts[1] - ends[0], end - ends[1]];
}

function resultItem(call, output) {
  return {
    type: "function_call_result",
    name: call.name,
    callId: call.callId,
    status: "completed",
    output: { type: "text", text: output },
  };
}

async function gatedTurn(key, fresh) {
  let r = await drain(await sdk.run(gated, [...history, user(turnScript(key, 1, 2))], { stream: true }));
  const times = [];
  while (r.interruptions?.length) {
    const call = r.interruptions[0].rawItem;
    const output = lookUp(JSON.parse(call.arguments).key);
    const t = performance.now();
    if (fresh) {
      // An interrupted run's history leaves out the call it stopped at: the call item goes back in first.
      const items = r.history.some((item) => item.type === "function_call" && item.callId === call.callId)
        ? r.history
        : [...r.history, call];
      r = await drain(await sdk.run(gated, [...items, resultItem(call, output)], { stream: true }));
    } else {
      r.state.approve(r.interruptions[0]);
      r = await drain(await sdk.run(gated, r.state, { stream: true }));
    }
    times.push(performance.now() - t);
  }
  if (r.finalOutput === undefined) throw new Error("gated turn did not end");
  return { times, output: r.finalOutput };
}

// The three ways answer the same: the scripted model derives its answer from its input.
await raw("check");
const a = await gatedTurn("check", false);
const b = await gatedTurn("check", true);
if (a.output !== b.output) throw new Error(`resume and fresh answer differently:\n${a.output}\n${b.output}`);

const ways = { raw: [[], []], resume: [[], []], fresh: [[], []] };
for (let i = 0; i < 30; i++) {
  await raw(`w${i}`);
  await gatedTurn(`w${i}`, false);
  await gatedTurn(`w${i}`, true);
}
for (let i = 0; i < rounds; i++) {
  const order = i % 3;
  for (let k = 0; k < 3; k++) {
    const which = (order + k) % 3;
    const [name, times] =
      which === 0
        ? ["raw", await raw(`m${i}`)]
        : which === 1
          ? ["resume", (await gatedTurn(`m${i}`, false)).times]
          : ["fresh", (await gatedTurn(`m${i}`, true)).times];
    for (const [j, t] of times.entries()) ways[name][j].push(t);
  }
}
const median = (xs) => [...xs].sort((x, y) => x - y)[Math.ceil(xs.length / 2) - 1];
console.log(`history ${history.length} items, ${rounds} rounds, medians in ms:`);
for (const [name, [second, third]] of Object.entries(ways))
  console.log(
    `  ${name.padEnd(6)} 2nd model step ${median(second).toFixed(3)} (${(median(second) / median(ways.raw[0])).toFixed(2)}x raw), 3rd ${median(third).toFixed(3)} (${(median(third) / median(ways.raw[1])).toFixed(2)}x raw)`,
  );
