// A scripted OpenAI-compatible server for tests: real HTTP (node:http on 127.0.0.1:0) speaking
// `POST /v1/chat/completions` (non-streaming) well enough for the official `openai` SDK, answered by a script the test
// writes. Never a stub inside the orchestrator: the orchestrator's real client code talks to this over the network.
//
// A script is either
//   - a function `(body, index) => reply`: it sees the whole request (the conversation), so on a replay the same
//     step is chosen by content, not by call count (see `byConversation`), or
//   - a list of steps, each a canned reply or such a function, taken in order of answered requests.
// A reply is `{content?, tool_calls?: [{name, arguments}], usage?}` or an HTTP error `{status, message?, retryAfter?}`.
// Options inject failures before the script is consulted (`failures: {status: 429, times: 2}`) and delay answers.
// Every request body is recorded in `requests` (injected failures included), in arrival order.
import { createServer, type IncomingHttpHeaders, type IncomingMessage, type ServerResponse } from 'node:http';

export interface ScriptedToolCall {
  name: string;
  /** An object (sent as its JSON) or a raw string (sent verbatim, e.g. to test unparseable arguments). */
  arguments: Record<string, unknown> | string;
  /** The call id; `call_<n>` numbered per server when absent. */
  id?: string;
}

export interface ScriptedReply {
  content?: string | null;
  tool_calls?: ScriptedToolCall[];
  usage?: { prompt_tokens: number; completion_tokens: number };
  /** Default: `tool_calls` when there are tool calls, else `stop`. */
  finish_reason?: string;
}

/** An HTTP error answer instead of a completion. */
export interface ScriptedError {
  status: number;
  message?: string;
  /** Seconds, sent as `Retry-After`. */
  retryAfter?: number;
}

export type ScriptedAnswer = ScriptedReply | ScriptedError;

export interface ChatMessage {
  role: string;
  content?: string | null;
  tool_calls?: { id: string; type: string; function: { name: string; arguments: string } }[];
  tool_call_id?: string;
}

export interface ChatRequest {
  model: string;
  messages: ChatMessage[];
  tools?: { type: string; function: { name: string; description?: string; parameters?: unknown } }[];
  temperature?: number;
  [key: string]: unknown;
}

/** `index` counts the requests the script was asked to answer before this one (injected failures not counted). */
export type ScriptFn<B = ChatRequest> = (body: B, index: number) => ScriptedAnswer | Promise<ScriptedAnswer>;
export type ScriptStep<B = ChatRequest> = ScriptedAnswer | ScriptFn<B>;
export type Script<B = ChatRequest> = ScriptFn<B> | ScriptStep<B>[];

export interface ScriptedFailure {
  status: number;
  /** How many requests get this answer (they are consumed in order, the first entry first). */
  times: number;
  retryAfter?: number;
  message?: string;
}

export interface ScriptedServerOptions<B = ChatRequest> {
  /** Failures answered before the script is consulted. */
  failures?: ScriptedFailure | ScriptedFailure[];
  /** Delay before each scripted answer (ms), or a function of the request. Ends early when the client goes away. */
  delayMs?: number | ((body: B, index: number) => number);
  /** Address to listen on; default 127.0.0.1 (0.0.0.0 lets containers reach it, scripts/compose-smoke.ts). */
  host?: string;
}

export type ScriptedLlmOptions = ScriptedServerOptions<ChatRequest>;

export interface ScriptedServer<B> {
  /** Base URL for the client (for OpenAI: ends in /v1). */
  url: string;
  /** Every request body received, in order (injected failures included). */
  requests: B[];
  /** The headers of each request, index-aligned with `requests`. */
  headers: IncomingHttpHeaders[];
  /** How many requests the script answered (or was asked to answer). */
  readonly answered: number;
  /** Resolves once at least `n` requests arrived; rejects after `timeoutMs` (default 10 s). */
  waitForRequests(n: number, timeoutMs?: number): Promise<void>;
  close(): Promise<void>;
}

export type ScriptedLlm = ScriptedServer<ChatRequest>;

/** A reply with one tool call. */
export function toolCall(name: string, args: Record<string, unknown> | string = {}, id?: string): ScriptedReply {
  return { tool_calls: [{ name, arguments: args, ...(id ? { id } : {}) }] };
}

/** A reply with several tool calls: `toolCalls(['fs_read', {path: 'a'}], ['fs_read', {path: 'b'}])`. */
export function toolCalls(...calls: [name: string, args: Record<string, unknown> | string][]): ScriptedReply {
  return { tool_calls: calls.map(([name, args]) => ({ name, arguments: args })) };
}

/** A plain text reply. */
export function textReply(content: string): ScriptedReply {
  return { content };
}

export function isScriptedError(a: ScriptedAnswer): a is ScriptedError {
  return typeof (a as ScriptedError).status === 'number';
}

/** The last message of the conversation. */
export function lastMessage(body: ChatRequest): ChatMessage | undefined {
  return body.messages[body.messages.length - 1];
}

/** Tool results after the last user message: how far the model got in the current turn. */
export function toolResultsSinceLastUser(body: ChatRequest): ChatMessage[] {
  const msgs = body.messages;
  let i = msgs.length - 1;
  while (i >= 0 && msgs[i]?.role !== 'user') i--;
  return msgs.slice(i + 1).filter((m) => m.role === 'tool');
}

/**
 * A script chosen by content: the first rule whose `when` matches the request answers it, so a request that is
 * replayed (after a crash, say) gets the same step as the first time. With no match: `otherwise`, or a 400 naming
 * the last message, so a test fails loudly instead of looping.
 */
export function byConversation<B = ChatRequest>(
  rules: { when: (body: B) => boolean; reply: ScriptStep<B> }[],
  otherwise?: ScriptStep<B>,
): ScriptFn<B> {
  return (body, index) => {
    const rule = rules.find((r) => r.when(body));
    const step = rule?.reply ?? otherwise;
    if (step === undefined) return { status: 400, message: `scripted LLM: no rule matches request ${index}` };
    return typeof step === 'function' ? step(body, index) : step;
  };
}

function readBody(req: IncomingMessage): Promise<string> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => resolve(Buffer.concat(chunks).toString('utf8')));
    req.on('error', reject);
  });
}

export function sendJson(res: ServerResponse, status: number, body: unknown, headers: Record<string, string> = {}): void {
  if (res.destroyed || res.headersSent) return;
  const text = JSON.stringify(body);
  res.writeHead(status, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(text), ...headers });
  res.end(text);
}

function pause(ms: number, res: ServerResponse): Promise<void> {
  return new Promise((resolve) => {
    if (ms <= 0 || res.destroyed) return resolve();
    const done = (): void => {
      clearTimeout(timer);
      res.off('close', done);
      resolve();
    };
    const timer = setTimeout(done, ms);
    res.on('close', done);
  });
}

/** The HTTP plumbing shared by the OpenAI and Anthropic scripted servers. */
export interface ScriptedDialect<B> {
  /** Does this request path belong to the API (e.g. ends in /chat/completions)? */
  accepts(method: string, path: string): boolean;
  /** Extra GET routes (model lists); undefined → 404. */
  get?(path: string): unknown;
  /** The success body for a scripted reply. */
  render(reply: ScriptedReply, body: B, ctx: { nextCallId(): string; seq: number }): unknown;
  /** The error body for an HTTP error answer. */
  error(status: number, message: string): unknown;
  /** Base URL from the listening origin. */
  url(origin: string): string;
}

export async function startScriptedServer<B>(dialect: ScriptedDialect<B>, script: Script<B>, opts: ScriptedServerOptions<B> = {}): Promise<ScriptedServer<B>> {
  const requests: B[] = [];
  const headers: IncomingHttpHeaders[] = [];
  const failures = (Array.isArray(opts.failures) ? opts.failures : opts.failures ? [opts.failures] : []).map((f) => ({ ...f }));
  const waiters: { n: number; resolve: () => void }[] = [];
  let answered = 0;
  let callSeq = 0;
  const ctx = { nextCallId: () => `call_${++callSeq}`, seq: 0 };

  const stepFor = (index: number): ScriptStep<B> | undefined => (typeof script === 'function' ? script : script[index]);

  const handle = async (req: IncomingMessage, res: ServerResponse): Promise<void> => {
    const path = (req.url ?? '/').split('?')[0] ?? '/';
    const method = req.method ?? 'GET';
    if (method === 'GET' && dialect.get) {
      const answer = dialect.get(path);
      if (answer !== undefined) return sendJson(res, 200, answer);
    }
    if (!dialect.accepts(method, path)) return sendJson(res, 404, dialect.error(404, `no route ${method} ${path}`));
    let body: B;
    try {
      body = JSON.parse(await readBody(req)) as B;
    } catch {
      return sendJson(res, 400, dialect.error(400, 'scripted LLM: the body is not JSON'));
    }
    requests.push(body);
    headers.push(req.headers);
    for (const w of waiters.filter((w) => requests.length >= w.n)) {
      waiters.splice(waiters.indexOf(w), 1);
      w.resolve();
    }
    const fail = failures.find((f) => f.times > 0);
    if (fail) {
      fail.times--;
      return sendJson(res, fail.status, dialect.error(fail.status, fail.message ?? `scripted ${fail.status}`), fail.retryAfter !== undefined ? { 'retry-after': String(fail.retryAfter) } : {});
    }
    const index = answered++;
    const delay = typeof opts.delayMs === 'function' ? opts.delayMs(body, index) : (opts.delayMs ?? 0);
    await pause(delay, res);
    if (res.destroyed) return;
    const step = stepFor(index);
    if (step === undefined) {
      const len = Array.isArray(script) ? script.length : 0;
      return sendJson(res, 400, dialect.error(400, `scripted LLM: no step ${index} (the script has ${len})`));
    }
    const answer = typeof step === 'function' ? await step(body, index) : step;
    if (isScriptedError(answer)) {
      return sendJson(res, answer.status, dialect.error(answer.status, answer.message ?? `scripted ${answer.status}`), answer.retryAfter !== undefined ? { 'retry-after': String(answer.retryAfter) } : {});
    }
    ctx.seq = index + 1;
    sendJson(res, 200, dialect.render(answer, body, ctx));
  };

  const server = createServer((req, res) => {
    handle(req, res).catch((err: unknown) => sendJson(res, 500, dialect.error(500, `scripted LLM: ${(err as Error).message}`)));
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(0, opts.host ?? '127.0.0.1', () => resolve());
  });
  const { port } = server.address() as { port: number };
  return {
    url: dialect.url(`http://127.0.0.1:${port}`),
    requests,
    headers,
    get answered() {
      return answered;
    },
    waitForRequests(n, timeoutMs = 30_000) {
      if (requests.length >= n) return Promise.resolve();
      return new Promise<void>((resolve, reject) => {
        const timer = setTimeout(() => reject(new Error(`scripted LLM: ${requests.length} of ${n} requests after ${timeoutMs} ms`)), timeoutMs);
        waiters.push({ n, resolve: () => (clearTimeout(timer), resolve()) });
      });
    },
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

const openAiDialect: ScriptedDialect<ChatRequest> = {
  accepts: (method, path) => method === 'POST' && path.endsWith('/chat/completions'),
  get: (path) => (path.endsWith('/models') ? { object: 'list', data: [{ id: 'scripted', object: 'model', created: 0, owned_by: 'scripted' }] } : undefined),
  error: (status, message) => ({ error: { message, type: status === 429 ? 'rate_limit_exceeded' : 'scripted', param: null, code: null } }),
  url: (origin) => `${origin}/v1`,
  render(reply, body, ctx) {
    const toolCalls = (reply.tool_calls ?? []).map((c) => ({
      id: c.id ?? ctx.nextCallId(),
      type: 'function' as const,
      function: { name: c.name, arguments: typeof c.arguments === 'string' ? c.arguments : JSON.stringify(c.arguments) },
    }));
    const prompt = reply.usage?.prompt_tokens ?? 10;
    const completion = reply.usage?.completion_tokens ?? 5;
    return {
      id: `chatcmpl-scripted-${ctx.seq}`,
      object: 'chat.completion',
      created: Math.floor(Date.now() / 1000),
      model: body.model,
      choices: [
        {
          index: 0,
          message: { role: 'assistant', content: reply.content ?? null, refusal: null, ...(toolCalls.length ? { tool_calls: toolCalls } : {}) },
          finish_reason: reply.finish_reason ?? (toolCalls.length ? 'tool_calls' : 'stop'),
          logprobs: null,
        },
      ],
      usage: { prompt_tokens: prompt, completion_tokens: completion, total_tokens: prompt + completion },
    };
  },
};

/** Starts the scripted OpenAI-compatible server; `url` ends in /v1 (the `baseURL` of the openai SDK). */
export function startScriptedLlm(script: Script<ChatRequest>, opts: ScriptedLlmOptions = {}): Promise<ScriptedLlm> {
  return startScriptedServer(openAiDialect, script, opts);
}
