// The model client's own cost (issue 24), an in-process figure: CPU per chat completion of orch's OpenAI-compatible
// provider (one JSON POST over node:http, src/agents/llm/json-post.ts) against the official SDK's client
// (`chat.completions.create`, fetch/undici and web streams underneath), both against one local HTTP server in this
// process answering a tool call at once, alternated round by round. The server's share of the CPU is the same for both;
// the difference is the client's. `npm run bench -- llm-client [--calls N]`.
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import OpenAI from 'openai';
import { OpenAiProvider } from '../src/agents/llm/openai.ts';
import { median } from './stats.ts';

const ANSWER = JSON.stringify({
  id: 'c', object: 'chat.completion', created: 1, model: 'm',
  choices: [{ index: 0, message: { role: 'assistant', content: null, tool_calls: [{ id: 'call_1', type: 'function', function: { name: 'cmd_run', arguments: '{"command":"echo","args":["hello"]}' } }] }, finish_reason: 'tool_calls' }],
  usage: { prompt_tokens: 120, completion_tokens: 12 },
});
const MESSAGES = [
  { role: 'system' as const, content: 'You are an agent. '.repeat(40) },
  { role: 'user' as const, content: 'Run echo, then answer.' },
];
const TOOLS = [{ name: 'cmd_run', description: 'Run a command', parameters: { type: 'object', properties: { command: { type: 'string' }, args: { type: 'array', items: { type: 'string' } } }, required: ['command'] } }];

async function cpuPerCall(call: () => Promise<unknown>, calls: number, concurrency: number): Promise<number> {
  const c0 = process.cpuUsage();
  let left = calls;
  await Promise.all(Array.from({ length: concurrency }, async () => {
    while (left-- > 0) await call();
  }));
  const c = process.cpuUsage(c0);
  return (c.user + c.system) / 1000 / calls;
}

export async function benchLlmClient(calls: number, log: (line: string) => void): Promise<void> {
  const server = http.createServer((req, res) => {
    req.resume();
    req.on('end', () => res.writeHead(200, { 'content-type': 'application/json' }).end(ANSWER));
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/v1`;
  const provider = new OpenAiProvider('bench', { endpoint: url, apiKey: 'k' });
  const sdk = new OpenAI({ apiKey: 'k', baseURL: url, maxRetries: 0 });
  const orchCall = () => provider.complete('m', { alias: 'default', messages: MESSAGES, tools: TOOLS });
  const sdkCall = () =>
    sdk.chat.completions.create({ model: 'm', messages: MESSAGES, tools: TOOLS.map((t) => ({ type: 'function' as const, function: t })) });
  try {
    for (const concurrency of [1, 50]) {
      // Warm-up: JIT, the keep-alive connections.
      await cpuPerCall(orchCall, 300, concurrency);
      await cpuPerCall(sdkCall, 300, concurrency);
      const mine: number[] = [];
      const theirs: number[] = [];
      for (let round = 0; round < 3; round++) {
        mine.push(await cpuPerCall(orchCall, calls, concurrency));
        theirs.push(await cpuPerCall(sdkCall, calls, concurrency));
      }
      log(`llm-client, ${calls} calls x 3 rounds, concurrency ${concurrency} (in-process; client + server CPU per call): orch provider median ${median(mine).toFixed(3)} ms (${mine.map((x) => x.toFixed(3)).join(', ')}), openai SDK median ${median(theirs).toFixed(3)} ms (${theirs.map((x) => x.toFixed(3)).join(', ')}), ratio ${(median(mine) / median(theirs)).toFixed(2)}x`);
    }
  } finally {
    provider.close();
    server.closeAllConnections();
    await new Promise((r) => server.close(r));
  }
}
