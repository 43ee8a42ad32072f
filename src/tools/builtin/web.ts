// The web tools of seed 001. web.fetch: a real HTTP GET from the node, with the caller's network policy checked on
// the URL and on every redirect hop (DomainNotAllowed), a timeout (timeout_secs, default 30), an error on 4xx/5xx,
// and HTML converted to Markdown (turndown) unless to_markdown is false. web.search: needs an operator-supplied
// api_key on the `web.search` entry of spec.builtin_dispatchers; without one it answers a configuration error.
import type TurndownService from 'turndown';
import { lazyRequire } from '../../util/lazy-require.ts';
import type { NodeConfig } from '../../config/types.ts';
import { checkDomain } from '../policy.ts';
import type { ToolCallContext, ToolDefinition, ToolOutcome } from '../types.ts';
import { deadline } from '../../util/deadline.ts';
import { bool, fail, int, ok, schema, str } from './util.ts';

const MAX_REDIRECTS = 10;
const MAX_BODY_BYTES = 5 * 1024 * 1024;
/** The search API the web.search entry talks to (Brave Search; 2,000 free requests a month). */
export const SEARCH_API_URL = 'https://api.search.brave.com/res/v1/web/search';

const loadTurndown = lazyRequire<typeof TurndownService>('turndown');

export function htmlToMarkdown(html: string): string {
  const Turndown = loadTurndown();
  const td = new Turndown({ headingStyle: 'atx', codeBlockStyle: 'fenced', bulletListMarker: '-' });
  td.remove(['script', 'style', 'noscript', 'iframe']);
  return td.turndown(html).trim();
}

async function readCapped(res: Response): Promise<{ text: string; truncated: boolean }> {
  if (!res.body) return { text: '', truncated: false };
  const reader = res.body.getReader();
  const chunks: Uint8Array[] = [];
  let size = 0;
  let truncated = false;
  for (;;) {
    const { done, value } = await reader.read();
    if (done) break;
    size += value.byteLength;
    if (size > MAX_BODY_BYTES) {
      chunks.push(value.subarray(0, value.byteLength - (size - MAX_BODY_BYTES)));
      truncated = true;
      await reader.cancel().catch(() => undefined);
      break;
    }
    chunks.push(value);
  }
  return { text: Buffer.concat(chunks).toString('utf8'), truncated };
}

/** web.fetch's work under `signal` (its timeout and the caller's cancellation), following redirects by hand. */
async function fetchPage(ctx: ToolCallContext, args: Record<string, unknown>, url: string, follow: boolean, timeoutSecs: number, signal: AbortSignal): Promise<ToolOutcome> {
  let current = url;
  let res: Response | undefined;
  try {
    for (let hop = 0; ; hop++) {
      const denied = checkDomain(ctx.context, current);
      if (denied) return { ok: false, error: denied };
      res = await fetch(current, { redirect: 'manual', signal, headers: { 'user-agent': 'orch-web-fetch/1', accept: 'text/html,text/plain,application/json,*/*' } });
      const location = res.headers.get('location');
      if (!follow || res.status < 300 || res.status >= 400 || !location) break;
      await res.body?.cancel().catch(() => undefined);
      if (hop >= MAX_REDIRECTS) return fail('TooManyRedirects', `${url} redirected more than ${MAX_REDIRECTS} times`);
      current = new URL(location, current).toString();
    }
  } catch (err) {
    if (signal.aborted && !ctx.signal?.aborted) return fail('Timeout', `${current} did not answer within ${timeoutSecs} s`);
    const cause = (err as { cause?: { code?: string; message?: string } }).cause;
    return fail('NetworkError', `fetching ${current} failed: ${cause?.code ?? cause?.message ?? (err as Error).message}`);
  }
  if (res.status >= 400) {
    await res.body?.cancel().catch(() => undefined);
    return fail('HttpError', `${current} answered HTTP ${res.status} ${res.statusText}`.trim());
  }
  let body: { text: string; truncated: boolean };
  try {
    body = await readCapped(res);
  } catch (err) {
    if (signal.aborted) return fail('Timeout', `${current} did not send its body within ${timeoutSecs} s`);
    return fail('NetworkError', `reading ${current} failed: ${(err as Error).message}`);
  }
  const type = res.headers.get('content-type') ?? '';
  const html = /text\/html|application\/xhtml/i.test(type);
  const text = html && bool(args.to_markdown, true) ? htmlToMarkdown(body.text) : body.text;
  return ok(body.truncated ? `${text}\n… (truncated at ${MAX_BODY_BYTES} bytes)` : text);
}

function searchEntry(config: NodeConfig | undefined): Record<string, unknown> | undefined {
  return config?.builtin_dispatchers?.find((d) => d.name === 'web.search' || d.name === 'web_search')?.config;
}

export function webTools(config: NodeConfig | undefined): ToolDefinition[] {
  return [
    {
      name: 'web.fetch',
      description: 'Fetch a URL (http or https) and return the body; HTML is converted to Markdown unless to_markdown is false.',
      inputSchema: schema(
        {
          url: { type: 'string', description: 'http:// or https:// URL' },
          to_markdown: { type: 'boolean', default: true },
          follow_redirects: { type: 'boolean', default: true },
          timeout_secs: { type: 'integer', default: 30 },
        },
        ['url'],
      ),
      required: ['url'],
      skipJudge: true,
      async handler(ctx, args) {
        const url = str(args.url);
        if (!/^https?:\/\//i.test(url)) return fail('InvalidArguments', `url of tool web.fetch must start with http:// or https:// (got ${url.slice(0, 100)})`);
        const timeoutSecs = int(args.timeout_secs, 30, 1, 600);
        const follow = bool(args.follow_redirects, true);
        const timer = deadline(timeoutSecs * 1000, [ctx.signal]);
        try {
          return await fetchPage(ctx, args, url, follow, timeoutSecs, timer.signal);
        } finally {
          timer.dispose();
        }
      },
    },
    {
      name: 'web.search',
      description: 'Search the web; answers a list of results with title, URL and snippet. Needs a search API key in the node config.',
      inputSchema: schema({ query: { type: 'string' }, max_results: { type: 'integer', default: 10 } }, ['query']),
      required: ['query'],
      skipJudge: true,
      async handler(ctx, args) {
        const entry = searchEntry(config);
        const apiKey = typeof entry?.api_key === 'string' && entry.api_key.trim() !== '' ? entry.api_key : undefined;
        if (!apiKey) return fail('ConfigurationError', 'web.search is not configured: set api_key on the web.search entry of spec.builtin_dispatchers');
        const endpoint = typeof entry?.endpoint === 'string' ? entry.endpoint : SEARCH_API_URL;
        const denied = checkDomain(ctx.context, endpoint);
        if (denied) return { ok: false, error: denied };
        const max = int(args.max_results, 10, 1, 20);
        const u = new URL(endpoint);
        u.searchParams.set('q', str(args.query));
        u.searchParams.set('count', String(max));
        let res: Response;
        try {
          res = await fetch(u, { headers: { accept: 'application/json', 'x-subscription-token': apiKey }, signal: AbortSignal.timeout(30_000) });
        } catch (err) {
          return fail('NetworkError', `the search API did not answer: ${(err as Error).message}`);
        }
        if (!res.ok) return fail('HttpError', `the search API answered HTTP ${res.status}`);
        const data = (await res.json().catch(() => ({}))) as { web?: { results?: { title?: string; url?: string; description?: string }[] } };
        const results = (data.web?.results ?? []).slice(0, max);
        if (results.length === 0) return ok('no results');
        return ok(results.map((r, i) => `${i + 1}. ${r.title ?? ''}\n   ${r.url ?? ''}\n   ${(r.description ?? '').replace(/<[^>]+>/g, '')}`).join('\n'));
      },
    },
  ];
}
