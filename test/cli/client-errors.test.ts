// The CLI's HTTP client prints a refusal on one line with every field the server named (a 422's `errors` list of
// the agent routes, or the `details` list of the shared error handler), against a real HTTP server.
import test from 'ava';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { ApiClient } from '../../src/cli/client.ts';

async function serve(status: number, body: unknown): Promise<{ url: string; close: () => Promise<void> }> {
  const server = http.createServer((_req, res) => {
    res.writeHead(status, { 'content-type': 'application/json' });
    res.end(JSON.stringify(body));
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const { port } = server.address() as AddressInfo;
  return { url: `http://127.0.0.1:${port}`, close: () => new Promise((r) => server.close(() => r())) };
}

test('a 422 with an errors list names every field', async (t) => {
  const s = await serve(422, { error: 'invalid agent manifest', errors: [{ field: 'spec.runtime.image', message: 'is required' }, { field: 'metadata.name', message: 'must match ^[a-z]' }] });
  t.teardown(s.close);
  const err = await t.throwsAsync(new ApiClient({ url: s.url }, {}).request('POST', '/v1/agents', {}));
  t.is(err?.message, 'POST /v1/agents failed with 422: invalid agent manifest (spec.runtime.image: is required; metadata.name: must match ^[a-z])');
  t.false(err?.message.includes('\n'));
});

test('a details list is printed too; a plain error stays as it is', async (t) => {
  const a = await serve(422, { error: 'invalid workflow manifest', details: [{ field: 'spec.initial_state', message: 'names no state' }] });
  t.teardown(a.close);
  const e1 = await t.throwsAsync(new ApiClient({ url: a.url }, {}).request('POST', '/v1/workflows', {}));
  t.regex(e1?.message ?? '', /invalid workflow manifest \(spec\.initial_state: names no state\)$/);
  const b = await serve(404, { error: 'agent x not found' });
  t.teardown(b.close);
  const e2 = await t.throwsAsync(new ApiClient({ url: b.url }, {}).upload('PUT', '/v1/volumes/x/files/y', new Uint8Array([1])));
  t.is(e2?.message, 'PUT /v1/volumes/x/files/y failed with 404: agent x not found');
});
