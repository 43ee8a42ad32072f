// A scripted OpenAI-compatible server for tests: real HTTP (node:http on 127.0.0.1:0), `POST /v1/chat/completions`
// answered by a script the test writes. The script sees each request body (the whole conversation), so a replayed
// request maps to the same step by content, not by call count. Every request body is recorded in `requests`.
// Failure injection: `failures: [{status, times}]` answers the first requests with those statuses.
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';

export interface ScriptedReply {
  content?: string | null;
  tool_calls?: { name: string; arguments: Record<string, unknown> | string }[];
  usage?: { prompt_tokens: number; completion_tokens: number };
}

export type Script = (body: ChatRequest, index: number) => ScriptedReply | Promise<ScriptedReply>;

export interface ChatRequest {
  model: string;
  messages: { role: string; content?: string | null; tool_calls?: unknown[]; tool_call_id?: string }[];
  tools?: { type: string; function: { name: string; description?: string; parameters?: unknown } }[];
  temperature?: number;
  [key: string]: unknown;
}

export interface ScriptedLlmOptions {
  failures?: { status: number; times: number; retryAfter?: number }[];
  delayMs?: number;
}

export interface ScriptedLlm {
  /** Base URL for OpenAI clients, ending in /v1. */
  url: string;
  /** Every chat request received, in order (failed-injected ones included). */
  requests: ChatRequest[];
  close(): Promise<void>;
}

function readJson(req: IncomingMessage): Promise<unknown> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      try {
        resolve(JSON.parse(Buffer.concat(chunks).toString('utf8')));
      } catch (err) {
        reject(err);
      }
    });
    req.on('error', reject);
  });
}

function send(res: ServerResponse, status: number, body: unknown, headers: Record<string, string> = {}): void {
  const text = JSON.stringify(body);
  res.writeHead(status, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(text), ...headers });
  res.end(text);
}

let callSeq = 0;

export async function startScriptedLlm(script: Script, opts: ScriptedLlmOptions = {}): Promise<ScriptedLlm> {
  const requests: ChatRequest[] = [];
  const failures = (opts.failures ?? []).map((f) => ({ ...f }));
  let answered = 0;
  const server = createServer((req, res) => {
    if (req.method !== 'POST' || !req.url?.endsWith('/chat/completions')) return send(res, 404, { error: { message: 'not found' } });
    readJson(req)
      .then(async (raw) => {
        const body = raw as ChatRequest;
        requests.push(body);
        const fail = failures.find((f) => f.times > 0);
        if (fail) {
          fail.times--;
          return send(res, fail.status, { error: { message: `scripted ${fail.status}`, type: 'scripted' } }, fail.retryAfter !== undefined ? { 'retry-after': String(fail.retryAfter) } : {});
        }
        if (opts.delayMs) await new Promise((r) => setTimeout(r, opts.delayMs));
        const reply = await script(body, answered++);
        const toolCalls = (reply.tool_calls ?? []).map((c) => ({
          id: `call_${++callSeq}`,
          type: 'function',
          function: { name: c.name, arguments: typeof c.arguments === 'string' ? c.arguments : JSON.stringify(c.arguments) },
        }));
        if (res.destroyed) return;
        send(res, 200, {
          id: `chatcmpl-${callSeq}-${answered}`,
          object: 'chat.completion',
          created: Math.floor(Date.now() / 1000),
          model: body.model,
          choices: [
            {
              index: 0,
              message: { role: 'assistant', content: reply.content ?? null, ...(toolCalls.length ? { tool_calls: toolCalls } : {}) },
              finish_reason: toolCalls.length ? 'tool_calls' : 'stop',
              logprobs: null,
            },
          ],
          usage: {
            prompt_tokens: reply.usage?.prompt_tokens ?? 10,
            completion_tokens: reply.usage?.completion_tokens ?? 5,
            total_tokens: (reply.usage?.prompt_tokens ?? 10) + (reply.usage?.completion_tokens ?? 5),
          },
        });
      })
      .catch((err: unknown) => {
        if (!res.headersSent) send(res, 500, { error: { message: (err as Error).message } });
      });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as { port: number };
  return {
    url: `http://127.0.0.1:${port}/v1`,
    requests,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}
