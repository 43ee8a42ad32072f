// Issue 14: the database replay record of SEAL (seal_seen_signatures, nodes without Redis) was never pruned: one row
// per tool call, forever. Each row now carries keep_until (its session's expiry + 1 minute, migration 050); a bounded,
// index-driven batch removes rows past it on a timer, and a signature stays refused for as long as its session
// could use it (after that the token itself is refused).
import test from 'ava';
import { randomUUID } from 'node:crypto';
import { silentLogger } from '../../src/logging/logger.ts';
import { buildEnvelope } from '../../src/seal/client.ts';
import { PRUNE_SEEN_SIGNATURES, pruneSeenSignatures, startSeenSignaturePruner } from '../../src/seal/prune.ts';
import { fixture, type Fixture } from './harness.ts';

let offsetMs = 0;
const clock = () => Date.now() + offsetMs;

const count = async (f: Fixture, where = 'true'): Promise<number> =>
  (await f.db.query<{ n: number }>(`SELECT count(*)::INT4 AS n FROM seal_seen_signatures WHERE ${where}`)).rows[0]!.n;

test.serial('a used signature is kept until its session expires (+1 min), refused meanwhile; then pruned, and the envelope is still refused', async (t) => {
  const f = await fixture({ deps: { now: clock } });
  t.teardown(async () => {
    offsetMs = 0;
    await f.close();
  });
  const e = buildEnvelope('fs.read', { path: 'a.txt' }, { securityToken: f.token, privateKey: f.keys.privateKey, now: clock() });
  t.is((await f.seal.invoke(e)).httpStatus, 200);
  const row = (await f.db.query<{ keep_s: number }>(
    `SELECT EXTRACT(EPOCH FROM (r.keep_until - s.expires_at))::INT4 AS keep_s FROM seal_seen_signatures r JOIN seal_sessions s USING (session_id)`,
  )).rows;
  t.deepEqual(row, [{ keep_s: 60 }], 'keep_until is the session expiry + 1 minute');
  t.is(await pruneSeenSignatures(f.db), 0, 'a live session keeps its records');
  t.is((await f.seal.invoke(e)).httpStatus, 401, 'replay');
  // The session ends (resources.timeout 120 s): its token is refused before any replay check, so the record can go.
  offsetMs = 125_000;
  await f.db.query(`UPDATE seal_sessions SET expires_at = now() - INTERVAL '2 minutes'`);
  await f.db.query(`UPDATE seal_seen_signatures SET keep_until = now() - INTERVAL '1 minute'`);
  t.is(await pruneSeenSignatures(f.db), 1);
  t.is(await count(f), 0);
  const late = await f.seal.invoke({ ...e, timestamp: new Date(clock()).toISOString() });
  t.is(late.httpStatus, 401, 'the same envelope after the prune: the session is over');
  t.regex(JSON.stringify(late.body), /expired/);
});

test.serial('batches are bounded and oldest first; unexpired rows stay; the plan reads the keep_until index; the timer prunes', async (t) => {
  const f = await fixture();
  t.teardown(() => f.close());
  const session = randomUUID();
  // 2,500 expired rows of a gone session, 300 that must stay.
  await f.db.query(
    `INSERT INTO seal_seen_signatures (session_id, signature_hash, keep_until)
     SELECT $1, 'old-' || g, now() - (g * INTERVAL '1 second') FROM generate_series(1, 2500) g`, [session]);
  await f.db.query(
    `INSERT INTO seal_seen_signatures (session_id, signature_hash, keep_until)
     SELECT $1, 'live-' || g, now() + INTERVAL '1 hour' FROM generate_series(1, 300) g`, [session]);
  t.is(await pruneSeenSignatures(f.db, 1000), 1000);
  // Oldest first: the 1,000 with the earliest keep_until (largest g) went.
  t.is(await count(f, `signature_hash IN ('old-2500', 'old-1501')`), 0);
  t.is(await count(f, `signature_hash = 'old-1500'`), 1);
  t.is(await pruneSeenSignatures(f.db, 1000), 1000);
  t.is(await pruneSeenSignatures(f.db, 1000), 500);
  t.is(await pruneSeenSignatures(f.db, 1000), 0);
  t.is(await count(f), 300, 'unexpired records stay');

  // Index-driven: with sequential scans priced out, the batch's keys come from the keep_until index.
  await f.db.query('SET enable_seqscan = off');
  const plan = (await f.db.query<Record<string, string>>(`EXPLAIN ${PRUNE_SEEN_SIGNATURES.replace('$1::INT4', '1000')}`)).rows.map((r) => Object.values(r)[0]).join('\n');
  await f.db.query('SET enable_seqscan = on');
  t.regex(plan, /seal_seen_signatures_keep_until/, plan);

  // The node's timer.
  await f.db.query(`UPDATE seal_seen_signatures SET keep_until = now() - INTERVAL '1 second'`);
  const stop = startSeenSignaturePruner({ db: f.db, logger: silentLogger(), intervalMs: 20, batch: 100 });
  t.teardown(stop);
  for (let i = 0; i < 3000 && (await count(f)) > 0; i++) await new Promise((r) => setTimeout(r, 20));
  t.is(await count(f), 0);
});
