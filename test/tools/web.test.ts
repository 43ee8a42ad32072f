// web.fetch against a real local HTTP server (HTML → Markdown, plain text, redirects, 404, timeout,
// DomainNotAllowed, also on a redirect hop) and web.search's configuration error.
import test from 'ava';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { silentLogger } from '../../src/logging/logger.ts';
import { createToolCatalog } from '../../src/tools/catalog.ts';
import { callContext, context, nodeConfig } from './helpers.ts';

const catalog = createToolCatalog({ config: nodeConfig(), logger: silentLogger() });
let base = '';
let server: http.Server;

test.before(async () => {
  server = http.createServer((req, res) => {
    switch (req.url) {
      case '/page':
        res.writeHead(200, { 'content-type': 'text/html; charset=utf-8' });
        res.end('<html><head><style>p{}</style><script>alert(1)</script></head><body><h1>Title</h1><p>Some <strong>bold</strong> text and a <a href="https://example.com/x">link</a>.</p><ul><li>one</li><li>two</li></ul></body></html>');
        return;
      case '/text':
        res.writeHead(200, { 'content-type': 'text/plain' });
        res.end('plain body');
        return;
      case '/redirect':
        res.writeHead(302, { location: '/text' });
        res.end();
        return;
      case '/offsite':
        res.writeHead(302, { location: 'http://blocked.invalid/' });
        res.end();
        return;
      case '/slow':
        setTimeout(() => res.end('late'), 3000).unref(); // unref'd: not to hold the worker 2 s past the last test
        return;
      default:
        res.writeHead(404, { 'content-type': 'text/plain' });
        res.end('no such page');
    }
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
});

test.after.always(() => {
  server.closeAllConnections();
  server.close();
});

const local = callContext(context({ network: { mode: 'allow', allowlist: ['127.0.0.1'] } }));

test('web.fetch converts HTML to Markdown by default', async (t) => {
  const r = await catalog.call(local, 'web.fetch', { url: `${base}/page` });
  t.true(r.ok);
  const md = r.ok ? String(r.result) : '';
  t.regex(md, /^# Title/m);
  t.regex(md, /\*\*bold\*\*/);
  t.regex(md, /\[link\]\(https:\/\/example\.com\/x\)/);
  t.regex(md, /^- +one$/m);
  t.notRegex(md, /alert|<p>/);
  const raw = await catalog.call(local, 'web.fetch', { url: `${base}/page`, to_markdown: false });
  t.regex(raw.ok ? String(raw.result) : '', /<h1>Title<\/h1>/);
  t.like(await catalog.call(local, 'web.fetch', { url: `${base}/text` }), { ok: true, result: 'plain body' });
});

test('web.fetch follows redirects unless told not to, checking every hop', async (t) => {
  t.like(await catalog.call(local, 'web.fetch', { url: `${base}/redirect` }), { ok: true, result: 'plain body' });
  t.like(await catalog.call(local, 'web.fetch', { url: `${base}/redirect`, follow_redirects: false }), { ok: true, result: '' });
  t.like(await catalog.call(local, 'web.fetch', { url: `${base}/offsite` }), { ok: false, error: { error: 'DomainNotAllowed' } });
});

test('web.fetch: 4xx is an error, a slow server times out, a bad URL is refused', async (t) => {
  const r = await catalog.call(local, 'web.fetch', { url: `${base}/missing` });
  t.like(r, { ok: false, error: { error: 'HttpError' } });
  t.regex(r.ok ? '' : r.error.message, /404/);
  t.like(await catalog.call(local, 'web.fetch', { url: `${base}/slow`, timeout_secs: 1 }), { ok: false, error: { error: 'Timeout' } });
  t.like(await catalog.call(local, 'web.fetch', { url: 'ftp://example.com/' }), { ok: false, error: { error: 'InvalidArguments' } });
});

test('web.fetch: DomainNotAllowed outside the allowlist and with network none', async (t) => {
  const other = callContext(context({ network: { mode: 'allow', allowlist: ['example.com'] } }));
  t.like(await catalog.call(other, 'web.fetch', { url: `${base}/text` }), { ok: false, error: { error: 'DomainNotAllowed' } });
  const none = callContext(context({ network: { mode: 'none', allowlist: [] } }));
  t.like(await catalog.call(none, 'web.fetch', { url: `${base}/text` }), { ok: false, error: { error: 'DomainNotAllowed' } });
});

test('web.search without an api_key is a configuration error', async (t) => {
  t.deepEqual(await catalog.call(local, 'web.search', { query: 'orch' }), {
    ok: false,
    error: { error: 'ConfigurationError', message: 'web.search is not configured: set api_key on the web.search entry of spec.builtin_dispatchers' },
  });
  const configured = createToolCatalog({ config: nodeConfig({ builtin_dispatchers: [{ name: 'web.search', config: { api_key: 'k' } }] }), logger: silentLogger() });
  t.like(await configured.call(local, 'web.search', { query: 'orch' }), { ok: false, error: { error: 'DomainNotAllowed' } }, 'the search API domain is checked too');
});
