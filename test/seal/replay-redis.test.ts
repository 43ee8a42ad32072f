// The Redis replay path of SealService (real Redis at 127.0.0.1:6379, real PGlite, real Redis pub/sub bus): the
// replay record is `SET … NX PX <the session's remaining lifetime>`, shared by two SealService instances standing for two nodes; liveness comes
// from the execution's terminal event on the bus (403 at once), with the database re-read as a safety net.
import test from 'ava';
import { Redis } from 'ioredis';
import { executionStream } from '../../src/agents/execution/events.ts';
import { openBus } from '../../src/bus/open.ts';
import type { EventBus } from '../../src/bus/bus.ts';
import { silentLogger } from '../../src/logging/logger.ts';
import { buildEnvelope, generateKeyPair, publicKeyBase64 } from '../../src/seal/client.ts';
import { RedisReplayGuard, REPLAY_KEY_PREFIX } from '../../src/seal/replay.ts';
import { SealService } from '../../src/seal/service.ts';
import { fixture, smallCatalog, type Fixture } from './harness.ts';

const REDIS = process.env.REDIS_URL ?? 'redis://127.0.0.1:6379';
let f: Fixture;
let guardA: RedisReplayGuard;
let guardB: RedisReplayGuard;
let busA: EventBus;
let busB: EventBus;
let nodeB: SealService;
let redis: Redis;

test.before(async () => {
  guardA = await RedisReplayGuard.open(REDIS);
  guardB = await RedisReplayGuard.open(REDIS);
  busA = await openBus({ url: REDIS }, silentLogger());
  busB = await openBus({ url: REDIS }, silentLogger());
  f = await fixture({ deps: { replay: guardA, bus: busA } });
  // "Node B": another SealService on the same database, Redis and bus, with its own caches.
  nodeB = new SealService({ db: f.db, dataDir: f.dir, catalog: smallCatalog(), logger: silentLogger(), replay: guardB, bus: busB, livenessRevalidateMs: 60_000 });
  redis = new Redis(REDIS);
});
test.after.always(async () => {
  await f?.seal.close();
  await nodeB?.close();
  await Promise.all([guardA?.close(), guardB?.close(), busA?.close(), busB?.close()]);
  redis?.disconnect();
  await f?.close();
});

const sign = (name: string, args: Record<string, unknown>, o: { token?: string; key?: Uint8Array } = {}) =>
  buildEnvelope(name, args, { securityToken: o.token ?? f.token, privateKey: o.key ?? f.keys.privateKey });

test.serial('the Redis path is chosen; a call succeeds and leaves a record that lives as long as the session', async (t) => {
  t.is(f.seal.replayStore, 'redis');
  const before = (await f.db.query<{ n: number | string }>('SELECT count(*) AS n FROM seal_seen_signatures')).rows[0]!.n;
  const e = sign('fs.read', { path: 'a.txt' });
  t.is((await f.seal.invoke(e)).httpStatus, 200);
  const sessionId = (JSON.parse(Buffer.from(f.token.split('.')[1]!, 'base64url').toString()) as { session_id: string }).session_id;
  const keys = await redis.keys(`${REPLAY_KEY_PREFIX}${sessionId}:*`);
  t.is(keys.length, 1);
  const ttls = await Promise.all(keys.map((k) => redis.pttl(k)));
  // The fixture's session lives 120 s (resources.timeout); the record as long, plus the 30 s clock margin.
  t.true(ttls.every((ms) => ms > 110_000 && ms <= 150_000), JSON.stringify(ttls));
  const after = (await f.db.query<{ n: number | string }>('SELECT count(*) AS n FROM seal_seen_signatures')).rows[0]!.n;
  t.is(Number(after), Number(before), 'no database insert on the Redis path');
});

test.serial('replay on the same node → 401; replay of it on another node → 401 (the record is shared)', async (t) => {
  const e = sign('fs.read', { path: 'a.txt' });
  t.is((await f.seal.invoke(e)).httpStatus, 200);
  const again = await f.seal.invoke(e);
  t.is(again.httpStatus, 401);
  t.regex(JSON.stringify(again.body), /replay/);
  const onB = await nodeB.invoke(e);
  t.is(onB.httpStatus, 401);
  t.regex(JSON.stringify(onB.body), /replay/);
  // And the other way round: first seen on B, refused on A.
  const e2 = sign('fs.read', { path: 'b.txt' });
  t.is((await nodeB.invoke(e2)).httpStatus, 200);
  t.is((await f.seal.invoke(e2)).httpStatus, 401);
});

async function attested(): Promise<{ executionId: string; token: string; key: Uint8Array }> {
  const x = await f.newExecution();
  const k = generateKeyPair();
  const att = await f.seal.attest({ agent_id: x.agentId, execution_id: x.executionId, container_id: x.containerId, public_key: publicKeyBase64(k.publicKey) });
  return { executionId: x.executionId, token: att.security_token, key: k.privateKey };
}

test.serial('the execution ends (terminal event on the bus) → 403 on both nodes at once, before any re-read', async (t) => {
  const x = await attested();
  const call = (svc: SealService) => svc.invoke(sign('fs.read', { path: 'a' }, { token: x.token, key: x.key }));
  t.is((await call(f.seal)).httpStatus, 200);
  t.is((await call(nodeB)).httpStatus, 200);
  // Database first (the truth), then the announcement, as the execution loop does.
  await f.setStatus(x.executionId, 'failed');
  await busA.publish({ stream: executionStream(x.executionId), seq: 1, type: 'execution_failed', payload: { reason: 'cancelled' }, at: new Date().toISOString() });
  // Node B re-reads the database only every 60 s here: only the bus event can tell it.
  const deadline = Date.now() + 30_000;
  let b = await call(nodeB);
  while (b.httpStatus === 200 && Date.now() < deadline) {
    await new Promise((r) => setTimeout(r, 10));
    b = await call(nodeB);
  }
  t.is(b.httpStatus, 403);
  t.regex(JSON.stringify(b.body), /inactive/);
  t.is((await call(f.seal)).httpStatus, 403);
});

test.serial('an end the bus never announced is seen at the next database re-read', async (t) => {
  const svc = new SealService({ db: f.db, dataDir: f.dir, catalog: smallCatalog(), logger: silentLogger(), replay: guardA, bus: busA, livenessRevalidateMs: 100 });
  t.teardown(() => svc.close());
  const x = await attested();
  const call = () => svc.invoke(sign('fs.read', { path: 'a' }, { token: x.token, key: x.key }));
  t.is((await call()).httpStatus, 200);
  await f.setStatus(x.executionId, 'completed');
  await new Promise((r) => setTimeout(r, 150));
  t.is((await call()).httpStatus, 403);
});

test.serial('without Redis the database statement keeps the record', async (t) => {
  const svc = new SealService({ db: f.db, dataDir: f.dir, catalog: smallCatalog(), logger: silentLogger() });
  t.is(svc.replayStore, 'database');
  const x = await attested();
  const e = sign('fs.read', { path: 'a' }, { token: x.token, key: x.key });
  t.is((await svc.invoke(e)).httpStatus, 200);
  t.is((await svc.invoke(e)).httpStatus, 401);
});
