// /v1/volumes over real HTTP with real tokens on real PostgreSQL: every route, its errors (400, 401, 404, 409, 507),
// raw uploads and downloads (binary, larger than the JSON body limit), tenant isolation.
import { randomBytes } from 'node:crypto';
import test from 'ava';
import Fastify, { type FastifyInstance } from 'fastify';
import { createJwtAuthenticator } from '../../src/auth/jwt-authenticator.ts';
import { installAuth } from '../../src/gateway/http/auth-hook.ts';
import { installErrorHandling } from '../../src/gateway/http/errors.ts';
import { installRequestSchemas } from '../../src/gateway/http/request-schemas.ts';
import { registerVolumeRoutes } from '../../src/gateway/http/volume-routes.ts';
import { treeSize } from '../../src/volumes/disk.ts';
import { makeTestIdp } from '../support/jwks.ts';
import { volumeFixture, type VolumeFixture } from './support.ts';

let fx: VolumeFixture;
let app: FastifyInstance;
let base: string;
let alice: string;
let carol: string;

test.before(async () => {
  fx = await volumeFixture('pg');
  const idp = await makeTestIdp();
  // As app.ts: the 8 MiB JSON body limit, which raw uploads must not be bound by, and the route schemas (checked,
  // never coerced), which make the body and query checks the handlers no longer repeat.
  app = Fastify({ bodyLimit: 8 * 1024 * 1024, ajv: { customOptions: { coerceTypes: false, removeAdditional: false } } });
  installRequestSchemas(app);
  installErrorHandling(app);
  installAuth(app, createJwtAuthenticator({ jwksFile: idp.jwksFile, issuer: idp.issuer, audience: idp.audience }));
  await registerVolumeRoutes(app, fx.volumes);
  await app.listen({ host: '127.0.0.1', port: 0 });
  base = `http://127.0.0.1:${(app.server.address() as { port: number }).port}`;
  alice = await idp.sign({ sub: 'alice', tenant_id: 'acme' });
  carol = await idp.sign({ sub: 'carol', tenant_id: 'globex' });
});

test.after.always(async () => {
  await app?.close();
  await fx?.close();
});

interface Res {
  status: number;
  headers: Headers;
  bytes: Buffer;
  body: Record<string, unknown>;
}

async function call(method: string, p: string, opts: { token?: string | null; json?: unknown; raw?: Buffer; contentType?: string } = {}): Promise<Res> {
  const headers: Record<string, string> = {};
  const token = opts.token === undefined ? alice : opts.token;
  if (token) headers.authorization = `Bearer ${token}`;
  let body: string | Buffer | undefined;
  if (opts.json !== undefined) {
    headers['content-type'] = 'application/json';
    body = JSON.stringify(opts.json);
  } else if (opts.raw !== undefined) {
    if (opts.contentType) headers['content-type'] = opts.contentType;
    body = opts.raw;
  }
  const res = await fetch(`${base}${p}`, { method, headers, ...(body !== undefined ? { body } : {}) }).catch((err: Error) => {
    throw new Error(`${method} ${p}: ${String(err.cause ?? err)}`);
  });
  const bytes = Buffer.from(await res.arrayBuffer());
  let parsed: Record<string, unknown> = {};
  if ((res.headers.get('content-type') ?? '').includes('json')) parsed = JSON.parse(bytes.toString('utf8')) as Record<string, unknown>;
  return { status: res.status, headers: res.headers, bytes, body: parsed };
}

async function newVolume(limit = 1_000_000, label = 'v'): Promise<string> {
  const r = await call('POST', '/v1/volumes', { json: { label, size_limit_bytes: limit } });
  if (r.status !== 201) throw new Error(`create failed: ${r.status} ${JSON.stringify(r.body)}`);
  return r.body.id as string;
}

const q = (p: string): string => encodeURIComponent(p);

test('no token → 401', async (t) => {
  const r = await call('GET', '/v1/volumes', { token: null });
  t.is(r.status, 401);
  t.truthy(r.body.error);
});

test('POST/GET/PATCH/DELETE /v1/volumes and the quota', async (t) => {
  const created = await call('POST', '/v1/volumes', { json: { label: 'data', size_limit_bytes: 5000, storage_class: 'ephemeral', ttl_hours: 2 } });
  t.is(created.status, 201);
  t.like(created.body, { label: 'data', size_limit_bytes: 5000, used_bytes: 0, storage_class: 'ephemeral', ttl_hours: 2, owner_subject: 'alice', tenant_id: 'acme' });
  const id = created.body.id as string;
  const list = await call('GET', '/v1/volumes');
  t.is(list.status, 200);
  t.true((list.body.volumes as { id: string }[]).some((v) => v.id === id));
  const got = await call('GET', `/v1/volumes/${id}`);
  t.is(got.status, 200);
  t.is(got.body.label, 'data');
  const renamed = await call('PATCH', `/v1/volumes/${id}`, { json: { label: 'renamed' } });
  t.is(renamed.status, 200);
  t.is(renamed.body.label, 'renamed');
  const quota = await call('GET', `/v1/volumes/${id}/quota`);
  t.is(quota.status, 200);
  t.deepEqual(quota.body, { volume_id: id, size_limit_bytes: 5000, used_bytes: 0, available_bytes: 5000, file_count: 0, directory_count: 0 });
  const del = await call('DELETE', `/v1/volumes/${id}`);
  t.is(del.status, 200);
  t.deepEqual(del.body, { deleted: true, id });
  t.is((await call('GET', `/v1/volumes/${id}`)).status, 404);
  t.is((await call('DELETE', `/v1/volumes/${id}`)).status, 404);
});

test('bad volume input → 400 with {"error"}; unknown ids → 404', async (t) => {
  for (const json of [{ size_limit_bytes: 10 }, { label: 'x' }, { label: 'x', size_limit_bytes: -1 }, { label: 'x', size_limit_bytes: '10' }, { label: 'x', size_limit_bytes: 10, storage_class: 'cold' }, { label: 'x', size_limit_bytes: 10, ttl_hours: 5 }]) {
    const r = await call('POST', '/v1/volumes', { json });
    t.is(r.status, 400, JSON.stringify(json));
    t.is(typeof r.body.error, 'string');
  }
  t.is((await call('POST', '/v1/volumes', { raw: Buffer.from('[1]'), contentType: 'application/json' })).status, 400);
  t.is((await call('GET', '/v1/volumes?limit=abc')).status, 400);
  t.is((await call('GET', '/v1/volumes/00000000-0000-4000-8000-000000000000')).status, 404);
  t.is((await call('GET', '/v1/volumes/not-a-uuid/quota')).status, 404);
  const id = await newVolume();
  t.is((await call('PATCH', `/v1/volumes/${id}`, { json: { label: '' } })).status, 400);
  t.is((await call('PATCH', `/v1/volumes/${id}`, { json: {} })).status, 400);
});

test('files: upload, list, stat, download, mkdir, move, delete', async (t) => {
  const id = await newVolume();
  const data = randomBytes(70_000);
  const up = await call('PUT', `/v1/volumes/${id}/files/content?path=${q('/bin/blob.dat')}`, { raw: data, contentType: 'application/octet-stream' });
  t.is(up.status, 201);
  t.deepEqual(up.body, { path: '/bin/blob.dat', bytes_written: 70_000, size: 70_000, used_bytes: 70_000 });
  // Any content type is taken raw, JSON included.
  const js = await call('PUT', `/v1/volumes/${id}/files/content?path=${q('conf.json')}`, { raw: Buffer.from('{"a":1}'), contentType: 'application/json' });
  t.is(js.status, 201);
  const txt = await call('PUT', `/v1/volumes/${id}/files/content?path=${q('notes/ä b.txt')}`, { raw: Buffer.from('hello') });
  t.is(txt.status, 201);

  const down = await call('GET', `/v1/volumes/${id}/files/content?path=${q('/bin/blob.dat')}`);
  t.is(down.status, 200);
  t.is(down.headers.get('content-type'), 'application/octet-stream');
  t.is(down.headers.get('content-length'), '70000');
  t.true(down.bytes.equals(data));
  const named = await call('GET', `/v1/volumes/${id}/files/content?path=${q('notes/ä b.txt')}`);
  t.is(named.bytes.toString(), 'hello');
  t.regex(named.headers.get('content-disposition') ?? '', /filename\*=UTF-8''%C3%A4%20b\.txt/);
  t.is((await call('GET', `/v1/volumes/${id}/files/content?path=conf.json`)).bytes.toString(), '{"a":1}');

  const root = await call('GET', `/v1/volumes/${id}/files`);
  t.is(root.status, 200);
  t.is(root.body.path, '/');
  t.deepEqual((root.body.entries as { name: string; type: string }[]).map((e) => `${e.name}:${e.type}`), ['bin:directory', 'conf.json:file', 'notes:directory']);
  const sub = await call('GET', `/v1/volumes/${id}/files?path=bin`);
  t.like((sub.body.entries as unknown[])[0], { name: 'blob.dat', path: '/bin/blob.dat', type: 'file', size: 70_000 });
  const st = await call('GET', `/v1/volumes/${id}/files/stat?path=conf.json`);
  t.like(st.body, { path: '/conf.json', type: 'file', size: 7 });

  const mk = await call('POST', `/v1/volumes/${id}/files/mkdir`, { json: { path: 'x/y/z' } });
  t.is(mk.status, 201);
  t.like(mk.body, { path: '/x/y/z', type: 'directory' });
  t.is((await call('POST', `/v1/volumes/${id}/files/mkdir`, { json: { path: 'x/y/z', parents: false } })).status, 409);
  t.is((await call('POST', `/v1/volumes/${id}/files/mkdir`, { json: {} })).status, 400);

  const mv = await call('POST', `/v1/volumes/${id}/files/move`, { json: { from: 'conf.json', to: 'x/y/z/conf.json' } });
  t.is(mv.status, 200);
  t.like(mv.body, { path: '/x/y/z/conf.json', type: 'file' });
  t.is((await call('GET', `/v1/volumes/${id}/files/content?path=conf.json`)).status, 404);
  t.is((await call('POST', `/v1/volumes/${id}/files/move`, { json: { from: 'notes/ä b.txt', to: 'x/y/z/conf.json' } })).status, 409);
  t.is((await call('POST', `/v1/volumes/${id}/files/move`, { json: { from: 'notes/ä b.txt', to: 'x/y/z/conf.json', overwrite: true } })).status, 200);
  t.is((await call('POST', `/v1/volumes/${id}/files/move`, { json: { from: 'missing', to: 'y' } })).status, 404);

  t.is((await call('DELETE', `/v1/volumes/${id}/files?path=x`)).status, 409);
  const rm = await call('DELETE', `/v1/volumes/${id}/files?path=x&recursive=true`);
  t.is(rm.status, 200);
  t.deepEqual(rm.body, { path: '/x', freed_bytes: 5 });
  t.is((await call('DELETE', `/v1/volumes/${id}/files?path=x`)).status, 404);
  t.is((await call('DELETE', `/v1/volumes/${id}/files?path=/`)).status, 400);
  t.is((await call('DELETE', `/v1/volumes/${id}/files`)).status, 400);

  const quota = await call('GET', `/v1/volumes/${id}/quota`);
  t.like(quota.body, { used_bytes: 70_000, file_count: 1 });
  t.is(quota.body.used_bytes, (await treeSize(await fx.volumes.hostPath('acme', id))).bytes);
});

test('uploads larger than the JSON body limit stream in; ENOSPC is 507 and writes nothing', async (t) => {
  const id = await newVolume(12 * 1024 * 1024);
  const big = randomBytes(10 * 1024 * 1024);
  const up = await call('PUT', `/v1/volumes/${id}/files/content?path=big.bin`, { raw: big, contentType: 'application/octet-stream' });
  t.is(up.status, 201);
  t.true((await call('GET', `/v1/volumes/${id}/files/content?path=big.bin`)).bytes.equals(big));
  const over = await call('PUT', `/v1/volumes/${id}/files/content?path=more.bin`, { raw: randomBytes(3 * 1024 * 1024), contentType: 'application/octet-stream' });
  t.is(over.status, 507);
  t.regex(over.body.error as string, /ENOSPC/);
  t.like(over.body.details, { code: 'ENOSPC' });
  t.is((await call('GET', `/v1/volumes/${id}/files/stat?path=more.bin`)).status, 404);
  t.is((await call('GET', `/v1/volumes/${id}/quota`)).body.used_bytes, big.length);
  // exclusive refuses an existing file
  t.is((await call('PUT', `/v1/volumes/${id}/files/content?path=big.bin&exclusive=true`, { raw: Buffer.from('x') })).status, 409);
});

test('paths that leave the volume → 400; a directory where a file is expected → 409; missing → 404', async (t) => {
  const id = await newVolume();
  await call('POST', `/v1/volumes/${id}/files/mkdir`, { json: { path: 'd' } });
  const esc = await call('PUT', `/v1/volumes/${id}/files/content?path=${q('../../etc/x')}`, { raw: Buffer.from('x') });
  t.is(esc.status, 400);
  t.regex(esc.body.error as string, /outside the volume/);
  t.is((await call('GET', `/v1/volumes/${id}/files/content?path=${q('../x')}`)).status, 400);
  t.is((await call('GET', `/v1/volumes/${id}/files?path=${q('a/../../b')}`)).status, 400);
  t.is((await call('POST', `/v1/volumes/${id}/files/move`, { json: { from: 'd', to: '../d' } })).status, 400);
  t.is((await call('GET', `/v1/volumes/${id}/files/content?path=d`)).status, 409);
  t.is((await call('PUT', `/v1/volumes/${id}/files/content?path=d`, { raw: Buffer.from('x') })).status, 409);
  t.is((await call('GET', `/v1/volumes/${id}/files/content?path=nope`)).status, 404);
  t.is((await call('GET', `/v1/volumes/${id}/files/content`)).status, 400);
});

test('another tenant gets 404 for everything of a volume', async (t) => {
  const id = await newVolume();
  await call('PUT', `/v1/volumes/${id}/files/content?path=s.txt`, { raw: Buffer.from('secret') });
  const as = { token: carol };
  t.false(((await call('GET', '/v1/volumes', as)).body.volumes as { id: string }[]).some((v) => v.id === id));
  t.is((await call('GET', `/v1/volumes/${id}`, as)).status, 404);
  t.is((await call('GET', `/v1/volumes/${id}/quota`, as)).status, 404);
  t.is((await call('GET', `/v1/volumes/${id}/files`, as)).status, 404);
  t.is((await call('GET', `/v1/volumes/${id}/files/content?path=s.txt`, as)).status, 404);
  t.is((await call('PUT', `/v1/volumes/${id}/files/content?path=t.txt`, { ...as, raw: Buffer.from('x') })).status, 404);
  t.is((await call('PATCH', `/v1/volumes/${id}`, { ...as, json: { label: 'mine' } })).status, 404);
  t.is((await call('DELETE', `/v1/volumes/${id}/files?path=s.txt`, as)).status, 404);
  t.is((await call('DELETE', `/v1/volumes/${id}`, as)).status, 404);
  t.is((await call('GET', `/v1/volumes/${id}/files/content?path=s.txt`)).bytes.toString(), 'secret');
});
