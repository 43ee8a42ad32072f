// The OpenAI-compatible provider's HTTP client (src/agents/llm/json-post.ts) against a raw node:http server started
// here: what goes over the wire (path, headers, body), one kept-alive connection for consecutive calls, the server's
// error message in the refusal, and the failures retry.ts must classify (no answer in time: retryable; a body that is
// not JSON: terminal).
import test from 'ava';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { OrchError, RetryableError } from '../../src/errors/catalog.ts';
import { OpenAiProvider } from '../../src/agents/llm/openai.ts';
import { withLlmRetry } from '../../src/agents/llm/retry.ts';

interface Seen {
  method: string;
  url: string;
  headers: http.IncomingHttpHeaders;
  body: string;
  socket: number;
}

async function rawServer(answer: (req: Seen, res: http.ServerResponse) => void): Promise<{ url: string; seen: Seen[]; close(): Promise<void> }> {
  const seen: Seen[] = [];
  const sockets = new Map<object, number>();
  const server = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      if (!sockets.has(req.socket)) sockets.set(req.socket, sockets.size + 1);
      const s: Seen = { method: req.method ?? '', url: req.url ?? '', headers: req.headers, body: Buffer.concat(chunks).toString(), socket: sockets.get(req.socket)! };
      seen.push(s);
      answer(s, res);
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}/v1/`,
    seen,
    close: () => new Promise<void>((r) => { server.closeAllConnections(); server.close(() => r()); }),
  };
}

const completion = JSON.stringify({ id: 'c', object: 'chat.completion', created: 1, model: 'served-model', choices: [{ index: 0, message: { role: 'assistant', content: 'ok' }, finish_reason: 'stop' }], usage: { prompt_tokens: 3, completion_tokens: 1 } });
const ask = { alias: 'default', messages: [{ role: 'user' as const, content: 'hi' }], tools: [] };

test('the wire: POST <endpoint>/chat/completions with the key and the JSON body; consecutive calls share one connection', async (t) => {
  const srv = await rawServer((_s, res) => res.writeHead(200, { 'content-type': 'application/json' }).end(completion));
  const p = new OpenAiProvider('p', { endpoint: srv.url, apiKey: 'sk-wire' });
  t.teardown(async () => { p.close(); await srv.close(); });
  for (let i = 0; i < 3; i++) {
    const res = await p.complete('m-1', { ...ask, max_tokens: 5 });
    t.is(res.content, 'ok');
    t.is(res.model, 'served-model');
  }
  t.is(srv.seen.length, 3);
  const first = srv.seen[0]!;
  t.is(first.method, 'POST');
  t.is(first.url, '/v1/chat/completions', 'one slash between the endpoint (written with a trailing slash) and the path');
  t.is(first.headers.authorization, 'Bearer sk-wire');
  t.is(first.headers['content-type'], 'application/json');
  t.deepEqual(JSON.parse(first.body), { model: 'm-1', messages: [{ role: 'user', content: 'hi' }], max_tokens: 5 });
  t.deepEqual(srv.seen.map((s) => s.socket), [1, 1, 1], 'the connection is kept alive');
});

test("a refusal carries the server's own error message and status", async (t) => {
  const srv = await rawServer((_s, res) => res.writeHead(400, { 'content-type': 'application/json' }).end(JSON.stringify({ error: { message: 'context length exceeded' } })));
  const p = new OpenAiProvider('p', { endpoint: srv.url });
  t.teardown(async () => { p.close(); await srv.close(); });
  const err = await t.throwsAsync(withLlmRetry(() => p.complete('m', ask), undefined, { attempts: 3, baseDelayMs: 1 }), { instanceOf: OrchError });
  t.false(err instanceof RetryableError);
  t.regex(err?.message ?? '', /\(400\): 400 context length exceeded/);
  t.is(srv.seen.length, 1, 'a 400 is not retried');
  t.is(srv.seen[0]?.headers.authorization, 'Bearer not-needed', 'a keyless local server still gets a placeholder key');
});

test('no answer within the timeout is a retryable failure, retried until the attempts run out', async (t) => {
  const srv = await rawServer(() => undefined); // holds every request
  const p = new OpenAiProvider('p', { endpoint: srv.url, timeoutMs: 200 });
  t.teardown(async () => { p.close(); await srv.close(); });
  const err = await t.throwsAsync(withLlmRetry(() => p.complete('m', ask), undefined, { attempts: 2, baseDelayMs: 1 }), { instanceOf: RetryableError });
  t.regex(err?.message ?? '', /after 2 attempt.*no answer/);
  t.is(srv.seen.length, 2);
});

test('a 200 whose body is not JSON is a terminal failure naming what came back', async (t) => {
  const srv = await rawServer((_s, res) => res.writeHead(200, { 'content-type': 'text/html' }).end('<html>proxy login</html>'));
  const p = new OpenAiProvider('p', { endpoint: srv.url });
  t.teardown(async () => { p.close(); await srv.close(); });
  const err = await t.throwsAsync(withLlmRetry(() => p.complete('m', ask), undefined, { attempts: 3, baseDelayMs: 1 }), { instanceOf: OrchError });
  t.false(err instanceof RetryableError);
  t.regex(err?.message ?? '', /not JSON: <html>proxy login/);
  t.is(srv.seen.length, 1);
});
