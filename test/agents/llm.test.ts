// LLM providers through the registry against real HTTP servers started here: the OpenAI-compatible path with tool
// calls and usage, retries on 429/5xx (and none on other 4xx), aborts, and the unknown-alias sentence.
import test from 'ava';
import { createServer } from 'node:http';
import { silentLogger } from '../../src/logging/logger.ts';
import { createLlmRegistry } from '../../src/agents/llm/registry.ts';
import { startScriptedLlm } from '../support/scripted-llm.ts';

const FAST = { retry: { attempts: 4, baseDelayMs: 10, maxDelayMs: 50 } };

function registry(url: string, type: 'openai' | 'anthropic' = 'openai') {
  return createLlmRegistry([{ name: 'p', type, endpoint: url, api_key: 'k', models: [{ alias: 'default', model: 'm-1' }] }], silentLogger(), FAST);
}

test('openai-compatible: a tool call round trip, with the messages and tools the server received', async (t) => {
  const llm = await startScriptedLlm((body) =>
    body.messages.some((m) => m.role === 'tool') ? { content: 'done', usage: { prompt_tokens: 30, completion_tokens: 2 } } : { tool_calls: [{ name: 'fs_write', arguments: { path: 'a', content: 'b' } }] },
  );
  t.teardown(() => llm.close());
  const reg = registry(llm.url);
  const tools = [{ name: 'fs_write', description: 'write', parameters: { type: 'object', properties: { path: { type: 'string' } } } }];
  const first = await reg.complete({ alias: 'default', messages: [{ role: 'user', content: 'hi' }], tools });
  t.is(first.tool_calls.length, 1);
  t.deepEqual(first.tool_calls[0]?.arguments, { path: 'a', content: 'b' });
  t.is(first.provider, 'p');
  const call = first.tool_calls[0]!;
  const second = await reg.complete({
    alias: 'default',
    messages: [
      { role: 'user', content: 'hi' },
      { role: 'assistant', content: null, tool_calls: [call] },
      { role: 'tool', tool_call_id: call.id, content: 'ok' },
    ],
    tools,
  });
  t.is(second.content, 'done');
  t.deepEqual(second.usage, { prompt_tokens: 30, completion_tokens: 2 });
  t.is(llm.requests.length, 2);
  t.is(llm.requests[0]?.model, 'm-1', 'the alias resolved to the provider model');
  t.is(llm.requests[0]?.tools?.[0]?.function.name, 'fs_write');
  t.like(llm.requests[1]?.messages[2], { role: 'tool', tool_call_id: call.id, content: 'ok' });
});

test('429 and 500 are retried; a 400 is not', async (t) => {
  const llm = await startScriptedLlm(() => ({ content: 'ok' }), { failures: [{ status: 429, times: 1 }, { status: 500, times: 1 }] });
  t.teardown(() => llm.close());
  const res = await registry(llm.url).complete({ alias: 'default', messages: [{ role: 'user', content: 'x' }], tools: [] });
  t.is(res.content, 'ok');
  t.is(llm.requests.length, 3);

  const bad = await startScriptedLlm(() => ({ content: 'never' }), { failures: [{ status: 400, times: 5 }] });
  t.teardown(() => bad.close());
  await t.throwsAsync(registry(bad.url).complete({ alias: 'default', messages: [{ role: 'user', content: 'x' }], tools: [] }), { message: /refused \(400\)/ });
  t.is(bad.requests.length, 1);
});

test('retries give up after the configured attempts with a retryable error', async (t) => {
  const llm = await startScriptedLlm(() => ({ content: 'ok' }), { failures: [{ status: 503, times: 10 }] });
  t.teardown(() => llm.close());
  const err = await t.throwsAsync(registry(llm.url).complete({ alias: 'default', messages: [{ role: 'user', content: 'x' }], tools: [] }));
  t.is(err?.name, 'RetryableError');
  t.is(llm.requests.length, 4);
});

test('an aborted call stops at once and is not retried', async (t) => {
  const llm = await startScriptedLlm(() => ({ content: 'slow' }), { delayMs: 5000 });
  t.teardown(() => llm.close());
  const started = Date.now();
  await t.throwsAsync(registry(llm.url).complete({ alias: 'default', messages: [{ role: 'user', content: 'x' }], tools: [], signal: AbortSignal.timeout(200) }));
  t.true(Date.now() - started < 2000);
  t.is(llm.requests.length, 1);
});

test('an alias with no provider fails with the sentence users see', async (t) => {
  const reg = createLlmRegistry([], silentLogger());
  t.false(reg.hasAlias('x'));
  await t.throwsAsync(reg.complete({ alias: 'x', messages: [], tools: [] }), { message: 'no LLM provider configured for alias "x"' });
});

test('anthropic: system split out, tool_use and tool_result mapped both ways', async (t) => {
  const bodies: Record<string, unknown>[] = [];
  const server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const body = JSON.parse(Buffer.concat(chunks).toString()) as { messages: { content: { type: string }[] }[] };
      bodies.push(body);
      const hasResult = body.messages.some((m) => Array.isArray(m.content) && m.content.some((b) => b.type === 'tool_result'));
      const content = hasResult ? [{ type: 'text', text: 'all done' }] : [{ type: 'tool_use', id: 'tu_1', name: 'fs_read', input: { path: 'x' } }];
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end(JSON.stringify({ id: 'msg_1', type: 'message', role: 'assistant', model: 'claude-x', content, stop_reason: hasResult ? 'end_turn' : 'tool_use', stop_sequence: null, usage: { input_tokens: 12, output_tokens: 3 } }));
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  t.teardown(() => new Promise<void>((r) => server.close(() => r())));
  const url = `http://127.0.0.1:${(server.address() as { port: number }).port}`;
  const reg = registry(url, 'anthropic');
  const first = await reg.complete({ alias: 'default', messages: [{ role: 'system', content: 'be brief' }, { role: 'user', content: 'read x' }], tools: [{ name: 'fs_read', description: 'read', parameters: { type: 'object' } }] });
  t.deepEqual(first.tool_calls, [{ id: 'tu_1', name: 'fs_read', arguments: { path: 'x' } }]);
  t.deepEqual(first.usage, { prompt_tokens: 12, completion_tokens: 3 });
  t.is(bodies[0]?.system, 'be brief');
  const second = await reg.complete({
    alias: 'default',
    messages: [
      { role: 'user', content: 'read x' },
      { role: 'assistant', content: null, tool_calls: first.tool_calls },
      { role: 'tool', tool_call_id: 'tu_1', content: 'contents' },
    ],
    tools: [],
  });
  t.is(second.content, 'all done');
  t.deepEqual((bodies[1]?.messages as unknown[])[2], { role: 'user', content: [{ type: 'tool_result', tool_use_id: 'tu_1', content: 'contents' }] });
});
