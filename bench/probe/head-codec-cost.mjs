// Probe: what store-postgres's head compression (encodeHead: zlib's deflateRawSync against the preset
// dictionary) costs per call, in a small heap and next to a large one (a worker's heap holds the
// framework's state: every zlib call builds a stream object and a native handle, and their cost
// grows with the heap). JSON.stringify of the same head for scale.
// usage: node --expose-gc probe/head-codec-cost.mjs [calls=5000]
import { performance } from "node:perf_hooks";
import { decodeHead, encodeHead } from "@durable-agents/store-postgres";

const calls = Number(process.argv[2] ?? 5000);
const head = JSON.stringify({
  schemaVersion: 1,
  sessionId: "s1",
  agent: "peers",
  status: "running",
  turn: {
    turnId: "turn-6",
    userText: 'call look_up {"key":"am1"}',
    calls: Array.from({ length: 2 }, (_, i) => ({
      toolCallId: `call_01a2541b62fe_1_${i}`,
      name: "look_up",
      arguments: '{"key":"am1"}',
      effect: "read",
      status: "succeeded",
      attempts: 1,
      maxAttempts: 3,
      idempotencyKey: `s1/turn-6/call_01a2541b62fe_1_${i}`,
      output: "2725757eeecc38f19fedaa3dff5767ba2dab48b905371bd34f2419bd8825345b",
    })),
    steps: Array.from({ length: 5 }, (_, i) => ({
      step: i % 2 ? "CallTool" : "RunModel",
      status: "completed",
      attempt: 1,
    })),
  },
});

async function measure(label, body) {
  globalThis.gc?.();
  await new Promise((resolve) => setTimeout(resolve, 200));
  const cpu0 = process.cpuUsage();
  const t0 = performance.now();
  for (let i = 0; i < calls; i++) {
    body(i);
    if (i % 50 === 0) await new Promise((resolve) => setImmediate(resolve));
  }
  const cpu = process.cpuUsage(cpu0);
  const wall = ((performance.now() - t0) * 1000) / calls;
  console.log(`${label}: ${wall.toFixed(1)} µs wall, ${((cpu.user + cpu.system) / calls).toFixed(1)} µs CPU per call`);
}

const z = encodeHead(head);
if (JSON.stringify(decodeHead(z)) !== head) throw new Error("the head does not round-trip");
console.log(`head ${head.length} chars -> ${z.length} bytes`);
const keep = [];
for (const heap of ["small heap", "large heap"]) {
  if (heap === "large heap") for (let i = 0; i < 1_500_000; i++) keep.push({ a: i, b: `s${i}`, c: [i] });
  await measure(`encodeHead, ${heap}`, (i) => encodeHead(head + " ".repeat(i % 3)));
  await measure(`decodeHead, ${heap}`, () => decodeHead(z));
  await measure(`JSON.stringify, ${heap}`, (i) => JSON.stringify({ head, i }));
}
console.log(`(${keep.length} objects kept for the large heap)`);
