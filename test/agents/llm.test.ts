// LLM providers through the registry against real HTTP servers started here (scripted OpenAI-compatible and
// Anthropic servers): text replies, tool-call round trips with the exact wire messages, usage, retries on 429/5xx and
// connection failures (and none on other 4xx), aborts, alias resolution and the unknown-alias sentence, logging.
import test from 'ava';
import { Writable } from 'node:stream';
import { pino } from 'pino';
import { Errors, OrchError, RetryableError } from '../../src/errors/catalog.ts';
import { silentLogger } from '../../src/logging/logger.ts';
import { OpenAiProvider } from '../../src/agents/llm/openai.ts';
import { createLlmRegistry } from '../../src/agents/llm/registry.ts';
import { withLlmRetry } from '../../src/agents/llm/retry.ts';
import type { LlmProviderConfig } from '../../src/config/types.ts';
import type { LlmToolDef } from '../../src/agents/llm/types.ts';
import { byConversation, startScriptedLlm, textReply, toolCall, toolResultsSinceLastUser } from '../support/scripted-llm.ts';
import { hasToolResult, startScriptedAnthropic } from '../support/scripted-anthropic.ts';

const FAST = { retry: { attempts: 4, baseDelayMs: 5, maxDelayMs: 20 } };
const TOOLS: LlmToolDef[] = [
  { name: 'fs_write', description: 'write a file', parameters: { type: 'object', properties: { path: { type: 'string' }, content: { type: 'string' } }, required: ['path'] } },
];

function provider(url: string, type: 'openai' | 'anthropic' = 'openai', extra: Partial<LlmProviderConfig> = {}): LlmProviderConfig {
  return { name: 'p', type, endpoint: url, api_key: 'sk-test-key', models: [{ alias: 'default', model: 'm-1' }], ...extra };
}

function registry(url: string, type: 'openai' | 'anthropic' = 'openai') {
  return createLlmRegistry([provider(url, type)], silentLogger(), FAST);
}

const ask = (content = 'hi') => ({ alias: 'default', messages: [{ role: 'user' as const, content }], tools: [] });

test('openai-compatible: a text reply with usage, finish reason, provider and model', async (t) => {
  const llm = await startScriptedLlm([{ content: 'hello', usage: { prompt_tokens: 7, completion_tokens: 3 } }]);
  t.teardown(() => llm.close());
  const res = await registry(llm.url).complete({ ...ask('say hello'), temperature: 0.2 });
  t.deepEqual(res, { content: 'hello', tool_calls: [], finish_reason: 'stop', usage: { prompt_tokens: 7, completion_tokens: 3 }, provider: 'p', model: 'm-1' });
  t.is(llm.requests.length, 1);
  t.deepEqual(llm.requests[0]?.messages, [{ role: 'user', content: 'say hello' }]);
  t.is(llm.requests[0]?.model, 'm-1', 'the alias resolved to the provider model');
  t.is(llm.requests[0]?.temperature, 0.2);
  t.is(llm.requests[0]?.tools, undefined, 'no tools field when there are no tools');
  t.is(llm.headers[0]?.authorization, 'Bearer sk-test-key');
});

test('openai-compatible: a tool call round trip, with the exact messages and tools the server received', async (t) => {
  const llm = await startScriptedLlm([
    toolCall('fs_write', { path: 'a', content: 'b' }),
    (body) => ({ content: `done after ${toolResultsSinceLastUser(body).length} tool result(s)`, usage: { prompt_tokens: 30, completion_tokens: 2 } }),
  ]);
  t.teardown(() => llm.close());
  const reg = registry(llm.url);
  const first = await reg.complete({ alias: 'default', messages: [{ role: 'system', content: 'be brief' }, { role: 'user', content: 'hi' }], tools: TOOLS });
  t.is(first.finish_reason, 'tool_calls');
  t.is(first.content, null);
  t.is(first.tool_calls.length, 1);
  const call = first.tool_calls[0]!;
  t.like(call, { name: 'fs_write', arguments: { path: 'a', content: 'b' } });
  t.truthy(call.id);
  t.deepEqual(first.usage, { prompt_tokens: 10, completion_tokens: 5 });

  const second = await reg.complete({
    alias: 'default',
    messages: [
      { role: 'system', content: 'be brief' },
      { role: 'user', content: 'hi' },
      { role: 'assistant', content: null, tool_calls: [call] },
      { role: 'tool', tool_call_id: call.id, content: 'ok' },
    ],
    tools: TOOLS,
  });
  t.is(second.content, 'done after 1 tool result(s)');
  t.is(second.finish_reason, 'stop');
  t.deepEqual(second.usage, { prompt_tokens: 30, completion_tokens: 2 });

  t.is(llm.requests.length, 2);
  t.deepEqual(llm.requests[0]?.tools, [{ type: 'function', function: { name: 'fs_write', description: 'write a file', parameters: TOOLS[0]!.parameters } }]);
  t.deepEqual(llm.requests[1]?.messages, [
    { role: 'system', content: 'be brief' },
    { role: 'user', content: 'hi' },
    { role: 'assistant', content: null, tool_calls: [{ id: call.id, type: 'function', function: { name: 'fs_write', arguments: '{"path":"a","content":"b"}' } }] },
    { role: 'tool', tool_call_id: call.id, content: 'ok' },
  ]);
});

test('openai-compatible: unparseable tool arguments are kept under _raw and sent back verbatim', async (t) => {
  const llm = await startScriptedLlm([toolCall('fs_write', '{not json', 'call_x'), textReply('fine')]);
  t.teardown(() => llm.close());
  const reg = registry(llm.url);
  const first = await reg.complete({ ...ask(), tools: TOOLS });
  t.deepEqual(first.tool_calls, [{ id: 'call_x', name: 'fs_write', arguments: { _raw: '{not json' } }]);
  await reg.complete({ alias: 'default', messages: [{ role: 'user', content: 'hi' }, { role: 'assistant', content: null, tool_calls: first.tool_calls }, { role: 'tool', tool_call_id: 'call_x', content: 'bad args' }], tools: TOOLS });
  const sent = llm.requests[1]?.messages[1]?.tool_calls?.[0]?.function.arguments;
  t.is(sent, '{not json');
});

test('429 twice, then success: three requests seen', async (t) => {
  const llm = await startScriptedLlm([textReply('ok')], { failures: { status: 429, times: 2 } });
  t.teardown(() => llm.close());
  const res = await registry(llm.url).complete(ask());
  t.is(res.content, 'ok');
  t.is(llm.requests.length, 3);
});

test('a 500 is retried', async (t) => {
  const llm = await startScriptedLlm([textReply('ok')], { failures: [{ status: 500, times: 1 }, { status: 503, times: 1 }] });
  t.teardown(() => llm.close());
  t.is((await registry(llm.url).complete(ask())).content, 'ok');
  t.is(llm.requests.length, 3);
});

test('Retry-After is honoured', async (t) => {
  const llm = await startScriptedLlm([textReply('ok')], { failures: { status: 429, times: 1, retryAfter: 1 } });
  t.teardown(() => llm.close());
  const t0 = Date.now();
  t.is((await registry(llm.url).complete(ask())).content, 'ok');
  t.true(Date.now() - t0 >= 950, `waited ${Date.now() - t0} ms`);
  t.is(llm.requests.length, 2);
});

test('a 400 is not retried and is a terminal OrchError', async (t) => {
  const llm = await startScriptedLlm([textReply('never')], { failures: { status: 400, times: 5, message: 'bad tools' } });
  t.teardown(() => llm.close());
  const err = await t.throwsAsync(registry(llm.url).complete(ask()), { instanceOf: OrchError, message: /refused \(400\).*bad tools/ });
  t.false(err instanceof RetryableError);
  t.is(err?.code, Errors.BAD_REQUEST.code);
  t.deepEqual((err as OrchError).details, { status: 400 });
  t.is(llm.requests.length, 1);
});

test('a 401 is not retried and reads as a provider configuration problem', async (t) => {
  const llm = await startScriptedLlm([{ status: 401, message: 'invalid api key' }]);
  t.teardown(() => llm.close());
  const err = await t.throwsAsync(registry(llm.url).complete(ask()), { instanceOf: OrchError });
  t.is(err?.code, Errors.CONFIG_INVALID.code);
  t.false(err?.message.includes('sk-test-key'));
  t.is(llm.requests.length, 1);
});

test('retries give up after the configured attempts with a RetryableError carrying the cause', async (t) => {
  const llm = await startScriptedLlm([textReply('ok')], { failures: { status: 503, times: 10 } });
  t.teardown(() => llm.close());
  const err = await t.throwsAsync(registry(llm.url).complete(ask()), { instanceOf: RetryableError });
  t.is(err?.code, Errors.UNAVAILABLE.code);
  t.is((err?.cause as { status?: number }).status, 503);
  t.is(llm.requests.length, 4);

  const limited = await startScriptedLlm([textReply('ok')], { failures: { status: 429, times: 10 } });
  t.teardown(() => limited.close());
  const reg = createLlmRegistry([provider(limited.url)], silentLogger(), { retry: { attempts: 2, baseDelayMs: 1 } });
  const err2 = await t.throwsAsync(reg.complete(ask()), { instanceOf: RetryableError });
  t.is(err2?.code, Errors.RESOURCE_EXHAUSTED.code);
  t.is(limited.requests.length, 2);
});

test('connection failures are retried', async (t) => {
  const gone = await startScriptedLlm([]);
  const url = gone.url;
  await gone.close();
  const p = new OpenAiProvider('p', { endpoint: url, apiKey: 'k' });
  const attempts: number[] = [];
  const err = await t.throwsAsync(
    withLlmRetry((n) => (attempts.push(n), p.complete('m', ask())), undefined, { attempts: 3, baseDelayMs: 1 }),
    { instanceOf: RetryableError },
  );
  t.deepEqual(attempts, [1, 2, 3]);
  t.regex(err?.message ?? '', /after 3 attempt/);
});

test('an aborted call stops at once and is not retried', async (t) => {
  const llm = await startScriptedLlm([textReply('slow')], { delayMs: 120_000 });
  t.teardown(() => llm.close());
  const ac = new AbortController();
  const call = registry(llm.url).complete({ ...ask(), signal: ac.signal });
  // Abort once the server holds the request (a fixed timer could fire before it arrives on a loaded machine).
  await llm.waitForRequests(1);
  const started = Date.now();
  ac.abort();
  const err = await t.throwsAsync(call, { instanceOf: OrchError });
  t.false(err instanceof RetryableError);
  // Far under the server's 120 s delay: the abort ended the call (the margin is for a loaded machine).
  t.true(Date.now() - started < 30_000);
  t.is(llm.requests.length, 1);
});

test('an abort during the backoff ends the retries', async (t) => {
  const llm = await startScriptedLlm([textReply('ok')], { failures: { status: 503, times: 10, retryAfter: 60 } });
  t.teardown(() => llm.close());
  // The deadline fires when the registry logs that it is backing off (a fixed 300 ms timer fired before the request
  // even reached the server on a loaded machine), so the abort lands in the 60 s Retry-After wait.
  const deadline = new AbortController();
  let backoffs = 0;
  const watcher = pino({ level: 'debug' }, new Writable({
    write(chunk: Buffer, _enc, done) {
      if ((JSON.parse(chunk.toString()) as { msg?: string }).msg === 'llm call failed, retrying') {
        backoffs++;
        deadline.abort(new DOMException('the deadline passed', 'TimeoutError'));
      }
      done();
    },
  }));
  const started = Date.now();
  await t.throwsAsync(createLlmRegistry([provider(llm.url)], watcher, FAST).complete({ ...ask(), signal: deadline.signal }), { instanceOf: OrchError, message: /timed out/ });
  // Far under the 60 s Retry-After: the abort ended the wait (the margin is for a loaded machine).
  t.true(Date.now() - started < 30_000);
  t.is(backoffs, 1, 'aborted during the first backoff');
  t.is(llm.requests.length, 1);

  const ac = new AbortController();
  ac.abort();
  await t.throwsAsync(registry(llm.url).complete({ ...ask(), signal: ac.signal }), { instanceOf: OrchError });
  t.is(llm.requests.length, 1, 'an already aborted call sends nothing');
});

test('an alias with no provider fails with the sentence users see', async (t) => {
  const reg = createLlmRegistry([], silentLogger());
  t.false(reg.hasAlias('x'));
  const err = await t.throwsAsync(reg.complete({ alias: 'x', messages: [], tools: [] }), { instanceOf: OrchError, message: 'no LLM provider configured for alias "x"' });
  t.is(err?.code, Errors.CONFIG_INVALID.code);
});

test('aliases: the first provider declaring one wins, and concrete model names resolve', async (t) => {
  const a = await startScriptedLlm(() => textReply('from a'));
  const b = await startScriptedLlm(() => textReply('from b'));
  t.teardown(() => Promise.all([a.close(), b.close()]).then(() => undefined));
  const reg = createLlmRegistry(
    [
      { name: 'a', type: 'openai', endpoint: a.url, models: [{ alias: 'default', model: 'a-small' }, { alias: 'big', model: 'a-big' }] },
      { name: 'b', type: 'openai', endpoint: b.url, models: [{ alias: 'default', model: 'b-small' }, { alias: 'fast', model: 'b-fast' }] },
    ],
    silentLogger(),
    FAST,
  );
  t.deepEqual(reg.resolve('default'), { provider: 'a', model: 'a-small' });
  t.deepEqual(reg.resolve('fast'), { provider: 'b', model: 'b-fast' });
  t.deepEqual(reg.resolve('b-small'), { provider: 'b', model: 'b-small' });
  t.true(reg.hasAlias('a-big'));
  t.false(reg.hasAlias('nope'));
  t.like(await reg.complete({ ...ask(), alias: 'fast' }), { content: 'from b', provider: 'b', model: 'b-fast' });
  t.like(await reg.complete({ ...ask(), alias: 'b-small' }), { content: 'from b', model: 'b-small' });
  t.like(await reg.complete(ask()), { content: 'from a', provider: 'a' });
  t.is(a.headers[0]?.authorization, 'Bearer not-needed', 'a placeholder key when the endpoint needs none');
});

test('logs carry provider, model and tokens, never the key or message content', async (t) => {
  const lines: string[] = [];
  const sink = new Writable({ write: (chunk: Buffer, _enc, cb) => (lines.push(chunk.toString()), cb()) });
  const logger = pino({ level: 'debug' }, sink);
  const llm = await startScriptedLlm([textReply('the secret answer')], { failures: { status: 429, times: 1 } });
  t.teardown(() => llm.close());
  const reg = createLlmRegistry([provider(llm.url)], logger, FAST);
  await reg.complete(ask('a private question'));
  const text = lines.join('');
  t.regex(text, /"provider":"p"/);
  t.regex(text, /"model":"m-1"/);
  t.regex(text, /"prompt_tokens":10/);
  t.regex(text, /"attempts":2/);
  for (const secret of ['sk-test-key', 'a private question', 'the secret answer']) t.false(text.includes(secret), secret);
});

test('scripted server: steps run in order, a function step sees the conversation, an exhausted script answers 400', async (t) => {
  const llm = await startScriptedLlm([textReply('one'), (body, i) => textReply(`two:${i}:${body.messages.length}`)]);
  t.teardown(() => llm.close());
  const reg = registry(llm.url);
  t.is((await reg.complete(ask())).content, 'one');
  t.is((await reg.complete(ask())).content, 'two:1:1');
  await t.throwsAsync(reg.complete(ask()), { message: /no step 2/ });
  t.is(llm.answered, 3);
});

test('scripted server: byConversation picks the same step for a replayed request', async (t) => {
  const llm = await startScriptedLlm(
    byConversation([
      { when: (b) => toolResultsSinceLastUser(b).length === 0, reply: toolCall('fs_write', { path: 'x' }, 'call_1') },
      { when: (b) => toolResultsSinceLastUser(b).length === 1, reply: textReply('written') },
    ]),
  );
  t.teardown(() => llm.close());
  const reg = registry(llm.url);
  const first = await reg.complete({ ...ask(), tools: TOOLS });
  const replayed = await reg.complete({ ...ask(), tools: TOOLS });
  t.deepEqual(replayed.tool_calls, first.tool_calls);
  const after = await reg.complete({ alias: 'default', messages: [{ role: 'user', content: 'hi' }, { role: 'assistant', content: null, tool_calls: first.tool_calls }, { role: 'tool', tool_call_id: 'call_1', content: '{}' }], tools: TOOLS });
  t.is(after.content, 'written');
  t.is(llm.requests.length, 3);
});

test('anthropic: system split out, tool_use and tool_result mapped both ways, usage', async (t) => {
  const llm = await startScriptedAnthropic(
    (body) => (hasToolResult(body) ? { content: 'all done', usage: { prompt_tokens: 20, completion_tokens: 4 } } : { tool_calls: [{ id: 'tu_1', name: 'fs_write', arguments: { path: 'x' } }], usage: { prompt_tokens: 12, completion_tokens: 3 } }),
    { failures: { status: 529, times: 1 } },
  );
  t.teardown(() => llm.close());
  const reg = registry(llm.url, 'anthropic');
  const first = await reg.complete({ alias: 'default', messages: [{ role: 'system', content: 'be brief' }, { role: 'user', content: 'write x' }], tools: TOOLS, temperature: 1.5 });
  t.deepEqual(first, { content: null, tool_calls: [{ id: 'tu_1', name: 'fs_write', arguments: { path: 'x' } }], finish_reason: 'tool_calls', usage: { prompt_tokens: 12, completion_tokens: 3 }, provider: 'p', model: 'm-1' });
  t.is(llm.requests.length, 2, 'the overloaded (529) answer was retried');
  const req0 = llm.requests[1]!;
  t.is(req0.system, 'be brief');
  t.is(req0.model, 'm-1');
  t.is(req0.max_tokens, 4096);
  t.is(req0.temperature, 1, 'clamped to the Anthropic range');
  t.deepEqual(req0.messages, [{ role: 'user', content: [{ type: 'text', text: 'write x' }] }]);
  t.deepEqual(req0.tools, [{ name: 'fs_write', description: 'write a file', input_schema: TOOLS[0]!.parameters }]);
  // The SDK sends the key as x-api-key or (newer versions) as a bearer token.
  t.regex(String(llm.headers[1]?.['x-api-key'] ?? llm.headers[1]?.authorization), /^(Bearer )?sk-test-key$/);

  const second = await reg.complete({
    alias: 'default',
    messages: [
      { role: 'system', content: 'be brief' },
      { role: 'user', content: 'write x' },
      { role: 'assistant', content: 'writing', tool_calls: first.tool_calls },
      { role: 'tool', tool_call_id: 'tu_1', content: 'written' },
      { role: 'user', content: 'and now?' },
    ],
    tools: TOOLS,
    max_tokens: 100,
  });
  t.like(second, { content: 'all done', tool_calls: [], finish_reason: 'stop', usage: { prompt_tokens: 20, completion_tokens: 4 } });
  const req1 = llm.requests[2]!;
  t.is(req1.max_tokens, 100);
  t.deepEqual(req1.messages, [
    { role: 'user', content: [{ type: 'text', text: 'write x' }] },
    { role: 'assistant', content: [{ type: 'text', text: 'writing' }, { type: 'tool_use', id: 'tu_1', name: 'fs_write', input: { path: 'x' } }] },
    { role: 'user', content: [{ type: 'tool_result', tool_use_id: 'tu_1', content: 'written' }, { type: 'text', text: 'and now?' }] },
  ]);
});

test('anthropic: a 400 is terminal, an endpoint written with /v1 works too', async (t) => {
  const llm = await startScriptedAnthropic([{ status: 400, message: 'messages: empty' }, textReply('ok')]);
  t.teardown(() => llm.close());
  const reg = registry(`${llm.url}/v1`, 'anthropic');
  await t.throwsAsync(reg.complete(ask()), { instanceOf: OrchError, message: /refused \(400\)/ });
  t.is((await reg.complete(ask())).content, 'ok');
  t.is(llm.requests.length, 2);
});
