// Issue 14 finding 3, replayed on both replay records (the database statement on PGlite, and Redis SET NX at
// 127.0.0.1:6379): after a 200, the same envelope with the signature's `=` padding stripped, in base64url, with the
// unused low bits of its last base64 character flipped, or with the malleable twin of its S half (S + L) was
// answered 200 again; with Redis the record expired after 60 s, so the same envelope re-sent 62 s later with a fresh
// timestamp was 200. Now each spelling other than the canonical one is a 400 naming the rule, the twin is 401, and the
// record lives as long as the session (the clock is moved 62 s on; the Redis key's own TTL is read).
import test, { type ExecutionContext } from 'ava';
import { Redis } from 'ioredis';
import { openBus } from '../../src/bus/open.ts';
import type { EventBus } from '../../src/bus/bus.ts';
import { silentLogger } from '../../src/logging/logger.ts';
import { buildEnvelope, toHttpBody, type BuiltEnvelope } from '../../src/seal/client.ts';
import { envelopeFromHttp } from '../../src/seal/envelope.ts';
import { RedisReplayGuard, REPLAY_KEY_PREFIX } from '../../src/seal/replay.ts';
import { fixture, type Fixture } from './harness.ts';

const REDIS = process.env.REDIS_URL ?? 'redis://127.0.0.1:6379';
/** The Ed25519 group order L (RFC 8032). */
const L = (1n << 252n) + 27742317777372353535851937790883648493n;

/** The service's clock: moved on by the test to stand for "later" without sleeping. */
let offsetMs = 0;
const clock = () => Date.now() + offsetMs;

interface Backend {
  name: string;
  f: Fixture;
  close(): Promise<void>;
}

async function pglite(): Promise<Backend> {
  const f = await fixture({ deps: { now: clock } });
  return { name: 'database', f, close: () => f.close() };
}

async function redisBacked(): Promise<Backend> {
  const guard = await RedisReplayGuard.open(REDIS);
  const bus: EventBus = await openBus({ url: REDIS }, silentLogger());
  const f = await fixture({ deps: { now: clock, replay: guard, bus } });
  return {
    name: 'redis',
    f,
    close: async () => {
      await f.seal.close();
      await Promise.all([guard.close(), bus.close()]);
      await f.close();
    },
  };
}

/** An envelope whose signature has a `+` or `/` (so its base64url spelling differs in more than the padding). */
function envelope(f: Fixture): BuiltEnvelope {
  for (;;) {
    const e = buildEnvelope('fs.read', { path: 'a.txt' }, { securityToken: f.token, privateKey: f.keys.privateKey, now: clock() });
    if (/[+/]/.test(e.signature)) return e;
  }
}

function lowBitsFlipped(sig: string): string {
  // 64 bytes: the last group is one byte, "Xy==": y's low four bits are unused.
  const alphabet = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/';
  const last = sig.charAt(sig.length - 3);
  const flipped = alphabet.charAt(alphabet.indexOf(last) ^ 0b0101);
  return `${sig.slice(0, -3)}${flipped}==`;
}

/** The same R with S + L: decodes to different bytes that a lax verifier also accepts. */
function malleated(sig: string): string {
  const b = Buffer.from(sig, 'base64');
  const s = BigInt(`0x${Buffer.from(b.subarray(32)).reverse().toString('hex')}`) + L;
  const le = Buffer.from(s.toString(16).padStart(64, '0'), 'hex').reverse();
  return Buffer.concat([b.subarray(0, 32), le]).toString('base64');
}

const message = (body: unknown): string => (body as { error?: { message?: string } }).error?.message ?? '';

for (const open of [pglite, redisBacked]) {
  test.serial(`${open.name}: every other spelling of a used signature is refused, and the malleable twin too`, async (t) => {
    const b = await open();
    t.teardown(() => b.close());
    const e = envelope(b.f);
    t.is((await b.f.seal.invoke(e)).httpStatus, 200);
    const spellings = {
      'padding stripped': e.signature.replace(/=+$/, ''),
      base64url: Buffer.from(e.signature, 'base64').toString('base64url'),
      'base64url padded': `${Buffer.from(e.signature, 'base64').toString('base64url')}==`,
      'low bits flipped': lowBitsFlipped(e.signature),
      'surrounding space': ` ${e.signature}\n`,
    };
    for (const [what, signature] of Object.entries(spellings)) {
      t.not(signature, e.signature);
      t.deepEqual(Buffer.from(signature.trim(), 'base64'), Buffer.from(e.signature, 'base64'), `${what} decodes to the same bytes`);
      const res = await b.f.seal.invoke({ ...e, signature });
      t.is(res.httpStatus, 400, `${b.name}: ${what}`);
      t.regex(message(res.body), /signature must be canonical base64/, what);
      t.like(res.body, { error: { code: -32600 } });
      // The same over the HTTP body's parser (the gRPC handler hands the same string to the same check).
      const viaHttp = await b.f.seal.invoke(envelopeFromHttp({ ...toHttpBody(e), signature }));
      t.is(viaHttp.httpStatus, 400, `${b.name}: ${what} over the HTTP form`);
    }
    // Other bytes that verify under a lax verifier (S + L): a different key for a byte-keyed record, so refused by the
    // verifier itself (libsodium requires S < L).
    const twin = await b.f.seal.invoke({ ...e, signature: malleated(e.signature) });
    t.is(twin.httpStatus, 401, `${b.name}: S + L`);
    // And the canonical spelling itself is a replay.
    const again = await b.f.seal.invoke(e);
    t.is(again.httpStatus, 401);
    t.regex(message(again.body), /replay/);
  });

  test.serial(`${open.name}: the same envelope 62 s later with a fresh timestamp is still a replay`, async (t) => {
    const b = await open();
    t.teardown(async () => {
      offsetMs = 0;
      await b.close();
    });
    const e = envelope(b.f);
    t.is((await b.f.seal.invoke(e)).httpStatus, 200);
    offsetMs = 62_000;
    const later = { ...e, timestamp: new Date(clock()).toISOString() };
    const res = await b.f.seal.invoke(later);
    t.is(res.httpStatus, 401);
    t.regex(message(res.body), /replay/);
    if (b.name === 'redis') await redisRecordOutlivesSession(t, b.f);
  });
}

/** The Redis record's real TTL: past the old 60 s, as long as the session's remaining lifetime (120 s here). */
async function redisRecordOutlivesSession(t: ExecutionContext, f: Fixture): Promise<void> {
  const redis = new Redis(REDIS);
  t.teardown(() => redis.disconnect());
  const sessionId = (JSON.parse(Buffer.from(f.token.split('.')[1]!, 'base64url').toString()) as { session_id: string; exp: number }).session_id;
  const keys = await redis.keys(`${REPLAY_KEY_PREFIX}${sessionId}:*`);
  t.is(keys.length, 1);
  const ttl = await redis.pttl(keys[0]!);
  t.true(ttl > 62_000, `the record outlives the old 60 s window (${ttl} ms left)`);
  t.true(ttl <= 120_000 + 30_000, `and no longer than the session's lifetime plus the clock margin (${ttl} ms)`);
}
