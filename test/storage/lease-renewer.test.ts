// LeaseRenewer on real PostgreSQL: all of a node's claims on a table renewed by one statement, with exact fencing —
// a row another node claimed (new epoch) is not extended and its holder hears it is lost; a row another transaction
// has locked is skipped (not waited for, not reported lost); a released row is no longer renewed.
import test from 'ava';
import pg from 'pg';
import { silentLogger } from '../../src/logging/logger.ts';
import { LeaseRenewer } from '../../src/storage/lease-renewer.ts';
import { openPg } from '../../src/storage/pg.ts';
import { claimRow, type RowClaim } from '../../src/storage/row-lease.ts';
import type { Db } from '../../src/storage/db.ts';
import { createTestDatabase } from '../support/pg.ts';

async function setup(t: import('ava').ExecutionContext): Promise<{ db: Db; url: string }> {
  const database = await createTestDatabase();
  const db = await openPg(database.url, { logger: silentLogger() });
  t.teardown(async () => {
    await db.close();
    await database.drop();
  });
  await db.query(`CREATE TABLE leased (id TEXT PRIMARY KEY, owner_node TEXT, epoch INT4 NOT NULL DEFAULT 0, lease_expires_at TIMESTAMPTZ, cancel_requested BOOLEAN NOT NULL DEFAULT FALSE)`);
  await db.query(`INSERT INTO leased (id) VALUES ('r1'), ('r2'), ('r3')`);
  return { db, url: database.url };
}

interface Heard {
  lost: string[];
  renewed: Record<string, unknown>[];
}

function holder(heard: Heard, key: string): { renewed(row: Record<string, unknown>): void; lost(err: Error): void } {
  return { renewed: (row) => heard.renewed.push({ key, ...row }), lost: (err) => heard.lost.push(`${key}: ${(err as { code?: string }).code}`) };
}

async function expiries(db: Db): Promise<Record<string, { owner: string | null; epoch: number; ms: number }>> {
  const res = await db.query<{ id: string; owner_node: string | null; epoch: number; ms: number }>(
    `SELECT id, owner_node, epoch, (EXTRACT(EPOCH FROM (lease_expires_at - now())) * 1000)::INT4 AS ms FROM leased ORDER BY id`,
  );
  return Object.fromEntries(res.rows.map((r) => [r.id, { owner: r.owner_node, epoch: r.epoch, ms: r.ms }]));
}

test('one tick renews every held claim, and a row taken over by another node is neither renewed nor kept', async (t) => {
  const { db } = await setup(t);
  const renewer = new LeaseRenewer(db, { table: 'leased', keyColumn: 'id', keyType: 'TEXT', nodeId: 'node-a', ttlMs: 60_000, columns: ['cancel_requested'], logger: silentLogger() });
  const heard: Heard = { lost: [], renewed: [] };
  const claims: RowClaim[] = [];
  for (const id of ['r1', 'r2', 'r3']) {
    const c = await claimRow(db, 'leased', 'id', id, 'node-a', 1_000);
    t.truthy(c);
    claims.push(c!);
    renewer.hold(c!, holder(heard, id));
  }
  // node-b claims r2 after node-a's claim expired (a new epoch), with its own lease.
  await db.query(`UPDATE leased SET lease_expires_at = now() - INTERVAL '1 second' WHERE id = 'r2'`);
  const b = await claimRow(db, 'leased', 'id', 'r2', 'node-b', 5_000);
  t.is(b?.epoch, 2);
  await db.query(`UPDATE leased SET cancel_requested = TRUE WHERE id = 'r3'`);

  t.deepEqual(await renewer.tick(), { renewed: 2, skipped: 0, lost: 1 });
  t.deepEqual(heard.lost, ['r2: lease_lost']);
  t.deepEqual(heard.renewed.map((r) => [r.key, r.cancel_requested]), [['r1', false], ['r3', true]]);
  const after = await expiries(db);
  t.true(after.r1!.ms > 50_000 && after.r3!.ms > 50_000, 'held rows extended to the ttl');
  t.is(after.r2!.owner, 'node-b');
  t.is(after.r2!.epoch, 2);
  t.true(after.r2!.ms <= 5_000, 'the row node-b took keeps node-b\'s lease');
  t.is(renewer.size, 2, 'the lost row is no longer held');

  // Released rows are no longer renewed; the next tick touches only what is still held.
  renewer.release(claims[0]!);
  await db.query(`UPDATE leased SET lease_expires_at = now() + INTERVAL '1 second' WHERE id IN ('r1', 'r3')`);
  t.deepEqual(await renewer.tick(), { renewed: 1, skipped: 0, lost: 0 });
  const again = await expiries(db);
  t.true(again.r1!.ms <= 1_000, 'released r1 not renewed');
  t.true(again.r3!.ms > 50_000);
});

test('a row locked by another transaction is skipped, not waited for and not reported lost', async (t) => {
  const { db, url } = await setup(t);
  const renewer = new LeaseRenewer(db, { table: 'leased', keyColumn: 'id', keyType: 'TEXT', nodeId: 'node-a', ttlMs: 60_000, logger: silentLogger() });
  const heard: Heard = { lost: [], renewed: [] };
  for (const id of ['r1', 'r2']) renewer.hold((await claimRow(db, 'leased', 'id', id, 'node-a', 1_000))!, holder(heard, id));
  const other = new pg.Client({ connectionString: url });
  await other.connect();
  t.teardown(() => other.end());
  await other.query('BEGIN');
  await other.query(`SELECT 1 FROM leased WHERE id = 'r1' FOR UPDATE`);
  // Without SKIP LOCKED this tick would wait for the other transaction forever (it is never committed before).
  t.deepEqual(await renewer.tick(), { renewed: 1, skipped: 1, lost: 0 });
  t.deepEqual(heard.lost, []);
  await other.query('COMMIT');
  t.deepEqual(await renewer.tick(), { renewed: 2, skipped: 0, lost: 0 });
  t.true((await expiries(db)).r1!.ms > 50_000);
});

test('a claim re-taken by the same node (a new epoch, a new incarnation) fences the old holder off', async (t) => {
  const { db } = await setup(t);
  const renewer = new LeaseRenewer(db, { table: 'leased', keyColumn: 'id', keyType: 'TEXT', nodeId: 'node-a', ttlMs: 60_000, logger: silentLogger() });
  const heard: Heard = { lost: [], renewed: [] };
  renewer.hold((await claimRow(db, 'leased', 'id', 'r1', 'node-a', 1_000))!, holder(heard, 'r1'));
  // A restarted process of node-a claims again: epoch 2. The epoch-1 holder must not be kept alive by the renewal.
  t.is((await claimRow(db, 'leased', 'id', 'r1', 'node-a', 1_000))?.epoch, 2);
  t.deepEqual(await renewer.tick(), { renewed: 0, skipped: 0, lost: 1 });
  t.deepEqual(heard.lost, ['r1: lease_lost']);
  t.true((await expiries(db)).r1!.ms <= 1_000);
});
