// One RunModel step in its own process: reads the step's input as JSON on stdin, writes the result.
import { buildRunner } from "./agent.mjs";

let text = "";
for await (const chunk of process.stdin) text += chunk;
const input = JSON.parse(text);
const { runner, model, runs } = buildRunner();
const deltas = [];
const result = await runner.runModel({
  ...input,
  sessionId: "cross",
  turnId: "t1",
  joined: input.joined ?? [],
  signal: new AbortController().signal,
  emit: (delta) => deltas.push(delta),
});
process.stdout.write(
  JSON.stringify({ result, modelCalls: model.calls, toolRuns: runs.length, deltas, pid: process.pid }),
);
