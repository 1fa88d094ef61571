import { Agent, Runner, RunState, tool, user } from '@openai/agents';
import { z } from 'zod';

let calls = 0;
const model = {
  async getResponse(req) {
    calls++;
    const input = req.input;
    const last = input[input.length - 1];
    if (last.type === 'function_call_result') {
      return { usage: { requests: 1, inputTokens: 3, outputTokens: 2, totalTokens: 5, inputTokensDetails: [], outputTokensDetails: [] }, output: [{ type: 'message', role: 'assistant', status: 'completed', content: [{ type: 'output_text', text: 'done: ' + JSON.stringify(last.output) }] }] };
    }
    return { usage: { requests: 1, inputTokens: 3, outputTokens: 2, totalTokens: 5, inputTokensDetails: [], outputTokensDetails: [] }, output: [
      { type: 'function_call', callId: 'c1', name: 'add', arguments: '{"a":1,"b":2}', status: 'completed' },
      { type: 'function_call', callId: 'c2', name: 'add', arguments: '{"a":5,"b":"x"}', status: 'completed' },
      { type: 'function_call', callId: 'c3', name: 'add', arguments: 'notjson', status: 'completed' },
    ] };
  },
  async *getStreamedResponse() { throw new Error('no'); },
};
let realRuns = 0;
const add = tool({ name: 'add', description: 'add', parameters: z.object({ a: z.number(), b: z.number() }), errorFunction: null, execute: async ({ a, b }) => { realRuns++; return String(a + b); } });
const agent = new Agent({ name: 'A', instructions: 'x', tools: [add] });
const copy = agent.clone({ tools: [{ ...add, needsApproval: async (ctx, input, callId) => { console.log('gate needsApproval', input, callId); return true; }, inputGuardrails: [], invoke: async (ctx, input, details) => { console.log('copy invoke', input, details?.toolCall?.callId); return 'recorded-' + details?.toolCall?.callId; } }] });
const runner = new Runner({ model, tracingDisabled: true });
const history = [user('old message'), { type: 'message', role: 'assistant', status: 'completed', content: [{ type: 'output_text', text: 'old answer' }] }, user('new msg')];
const r1 = await runner.run(copy, history, { maxTurns: 10 });
console.log('calls', calls, 'interruptions', r1.interruptions.map(i => [i.rawItem.callId, i.rawItem.name, i.rawItem.arguments]));
const s = r1.state.toString();
console.log('state bytes', s.length);
const j = JSON.parse(s);
console.log(Object.keys(j));
console.log('originalInput', JSON.stringify(j.originalInput).length, 'currentTurn', j.currentTurn, 'maxTurns', j.maxTurns);
for (const [k, v] of Object.entries(j)) console.log(k, JSON.stringify(v)?.length);
const st = await RunState.fromString(copy, s);
for (const it of st.getInterruptions()) { if (it.rawItem.callId === 'c2') st.reject(it, { message: 'nope from person' }); else st.approve(it); }
const r2 = await runner.run(copy, st, { maxTurns: 10 });
console.log('calls', calls, 'final', r2.finalOutput, 'realRuns', realRuns);
console.log(JSON.stringify(r2.history, null, 0));
console.log('newItems', r2.newItems.map(i => i.type));
console.log('usage', JSON.stringify(r2.state.usage), r2.rawResponses.length);
