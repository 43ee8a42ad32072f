// One behaviour suite for the Db interface, registered once per adapter (pglite.test.ts, pg.test.ts): whatever
// passes here behaves the same on PGlite and on PostgreSQL. Tests in a file run concurrently against one database,
// so every table, resource and stream name is random.
import test, { type ExecutionContext } from 'ava';
import { randomUUID } from 'node:crypto';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { Errors, OrchError } from '../../src/errors/catalog.ts';
import type { Db } from '../../src/storage/db.ts';
import { appendEvent, DbHistorySource } from '../../src/storage/event-log.ts';
import { acquireLease, assertLease, fencedWrite, getLease, releaseLease, renewLease } from '../../src/storage/lease.ts';
import { migrate } from '../../src/storage/migrate.ts';
import { claimRow, fencedUpdate, releaseRow, renewRow } from '../../src/storage/row-lease.ts';

export interface FreshDb {
  db: Db;
  cleanup(): Promise<void>;
}

export interface Adapter {
  kind: Db['kind'];
  /** A new, empty database (no migrations applied) with its own cleanup. */
  fresh(): Promise<FreshDb>;
  /**
   * 40001 is injected beneath the adapter (cockroach-rules.test.ts): tests that count how often a transaction
   * function ran are skipped, since an injected fault legitimately runs it again.
   */
  faultInjected?: boolean;
}

const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));
const rand = (): string => randomUUID().replace(/-/g, '').slice(0, 12);

function isLeaseLost(err: unknown): boolean {
  return err instanceof OrchError && err.spec === Errors.LEASE_LOST;
}

async function count(db: Db, table: string, where = 'TRUE', params: unknown[] = []): Promise<number> {
  const res = await db.query<{ n: number }>(`SELECT count(*)::INT AS n FROM ${table} WHERE ${where}`, params);
  return res.rows[0]!.n;
}

async function scratchTable(db: Db): Promise<string> {
  const table = `scratch_${rand()}`;
  await db.query(`CREATE TABLE ${table} (id UUID PRIMARY KEY, writer TEXT NOT NULL, n INT)`);
  return table;
}

async function migrationsDir(t: ExecutionContext, files: Record<string, string>): Promise<string> {
  const dir = await mkdtemp(path.join(os.tmpdir(), 'orch-migrations-'));
  t.teardown(() => rm(dir, { recursive: true, force: true }));
  for (const [name, sql] of Object.entries(files)) await writeFile(path.join(dir, name), sql);
  return dir;
}

export function dbConformance(adapter: Adapter): void {
  const title = (s: string): string => `${adapter.kind}: ${s}`;
  let db: Db;
  let cleanup: (() => Promise<void>) | undefined;

  test.before(async () => {
    const f = await adapter.fresh();
    db = f.db;
    cleanup = f.cleanup;
    await migrate(db);
  });
  test.after.always(async () => {
    await cleanup?.();
  });

  // --- queries and types ---------------------------------------------------------------------------------------

  test(title('parameters and column types come back the same on every adapter'), async (t) => {
    t.is(db.kind, adapter.kind);
    const at = new Date('2024-05-06T07:08:09.123Z');
    const res = await db.query(
      `SELECT $1::TEXT AS text, $2::INT AS int, $3::JSONB AS obj, $4::JSONB AS arr, $5::TIMESTAMPTZ AS at,
              $6::TEXT AS nothing, 9007199254740993::BIGINT AS big, 1.25::NUMERIC AS num, true AS yes,
              now() AS now`,
      ['héllo', 42, JSON.stringify({ a: { b: [1, 'x', null] } }), JSON.stringify([1, 2]), at, null],
    );
    const row = res.rows[0]!;
    t.is(row.text, 'héllo');
    t.is(row.int, 42);
    t.deepEqual(row.obj, { a: { b: [1, 'x', null] } });
    t.deepEqual(row.arr, [1, 2]);
    t.true(row.at instanceof Date);
    t.is((row.at as Date).toISOString(), at.toISOString());
    t.is(row.nothing, null);
    t.is(row.big, '9007199254740993', 'BIGINT stays a string: it may not fit a JS number');
    t.is(row.num, '1.25');
    t.is(row.yes, true);
    t.true(row.now instanceof Date);
    t.is(res.rowCount, 1);
  });

  test(title('a table round-trips JSONB, TIMESTAMPTZ and NULL; rowCount counts writes and selected rows'), async (t) => {
    const table = `typed_${rand()}`;
    await db.query(`CREATE TABLE ${table} (id UUID PRIMARY KEY, doc JSONB, at TIMESTAMPTZ, note TEXT)`);
    const ids = [randomUUID(), randomUUID(), randomUUID()];
    const ins = await db.query(
      `INSERT INTO ${table} (id, doc, at, note) VALUES ($1, $2, $3, NULL), ($4, $5, now(), 'x'), ($6, NULL, NULL, 'y')`,
      [ids[0], JSON.stringify({ k: 'v' }), new Date(0), ids[1], JSON.stringify('just a string'), ids[2]],
    );
    t.is(ins.rowCount, 3);
    const sel = await db.query<{ id: string; doc: unknown; at: Date | null; note: string | null }>(
      `SELECT id, doc, at, note FROM ${table} WHERE id = $1`,
      [ids[0]],
    );
    t.is(sel.rowCount, 1);
    t.deepEqual(sel.rows[0], { id: ids[0]!, doc: { k: 'v' }, at: new Date(0), note: null });
    const str = await db.query<{ doc: unknown }>(`SELECT doc FROM ${table} WHERE id = $1`, [ids[1]]);
    t.is(str.rows[0]!.doc, 'just a string');
    const upd = await db.query(`UPDATE ${table} SET note = 'z' WHERE note IS NOT NULL`);
    t.is(upd.rowCount, 2);
    const none = await db.query(`UPDATE ${table} SET note = 'z' WHERE id = $1`, [randomUUID()]);
    t.is(none.rowCount, 0);
    const del = await db.query(`DELETE FROM ${table} WHERE id = $1`, [ids[2]]);
    t.is(del.rowCount, 1);
    t.is((await db.query(`SELECT * FROM ${table}`)).rowCount, 2);
  });

  test(title('ping answers true; close may be called twice; a closed Db pings false'), async (t) => {
    t.true(await db.ping());
    const other = await adapter.fresh();
    t.true(await other.db.ping());
    await other.db.close();
    await other.db.close();
    t.false(await other.db.ping());
    await other.cleanup();
  });

  // --- transactions ----------------------------------------------------------------------------------------------

  test(title('tx commits everything fn wrote and returns its value'), async (t) => {
    const table = await scratchTable(db);
    const result = await db.tx(async (tx) => {
      await tx.query(`INSERT INTO ${table} (id, writer) VALUES ($1, 'a'), ($2, 'a')`, [randomUUID(), randomUUID()]);
      const res = await tx.query<{ n: number }>(`SELECT count(*)::INT AS n FROM ${table}`);
      return res.rows[0]!.n;
    });
    t.is(result, 2, 'fn sees its own writes');
    t.is(await count(db, table), 2);
  });

  test(title('tx rolls back when fn throws, leaving nothing written, and rethrows'), async (t) => {
    const table = await scratchTable(db);
    const boom = new Error('boom');
    const err = await t.throwsAsync(
      db.tx(async (tx) => {
        await tx.query(`INSERT INTO ${table} (id, writer) VALUES ($1, 'a')`, [randomUUID()]);
        throw boom;
      }),
    );
    t.is(err, boom);
    t.is(await count(db, table), 0);
  });

  test(title('tx rolls back when a statement fails'), async (t) => {
    const table = await scratchTable(db);
    const id = randomUUID();
    await t.throwsAsync(
      db.tx(async (tx) => {
        await tx.query(`INSERT INTO ${table} (id, writer) VALUES ($1, 'a')`, [randomUUID()]);
        await tx.query(`INSERT INTO ${table} (id, writer) VALUES ($1, 'a'), ($1, 'b')`, [id]);
      }),
      { message: /duplicate key/ },
    );
    t.is(await count(db, table), 0);
  });

  test(title('tx runs fn again after SQLSTATE 40001, the failed attempt rolled back'), async (t) => {
    const table = await scratchTable(db);
    let attempts = 0;
    const value = await db.tx(async (tx) => {
      attempts++;
      await tx.query(`INSERT INTO ${table} (id, writer, n) VALUES ($1, 'a', $2)`, [randomUUID(), attempts]);
      if (attempts === 1) throw Object.assign(new Error('could not serialize access'), { code: '40001' });
      return 'done';
    });
    t.is(value, 'done');
    // With injected faults an attempt may also fail at a statement or at commit and run once more.
    if (adapter.faultInjected) t.true(attempts >= 2);
    else t.is(attempts, 2);
    const rows = await db.query<{ n: number }>(`SELECT n FROM ${table}`);
    t.deepEqual(rows.rows, [{ n: attempts }], 'only the last attempt is committed');
  });

  test(title('a oneStatement tx: its statement applied, run again on 40001 before it ran, a second statement refused'), async (t) => {
    // Issue 24: where it runs standalone (pg at READ COMMITTED sessions, PGlite) it must keep what tx promises.
    const table = await scratchTable(db);
    const opts = { isolation: 'read committed', oneStatement: true } as const;
    let attempts = 0;
    const value = await db.tx(async (tx) => {
      if (++attempts === 1) throw Object.assign(new Error('could not serialize access'), { code: '40001' });
      return (await tx.query(`INSERT INTO ${table} (id, writer, n) VALUES ($1, 'a', $2)`, [randomUUID(), attempts])).rowCount;
    }, opts);
    t.is(value, 1);
    if (!adapter.faultInjected) t.is(attempts, 2);
    // Under injected faults the hint is dropped (faulty-db.ts: faults go into a real transaction), so no refusal.
    if (adapter.faultInjected) return;
    await t.throwsAsync(
      db.tx(async (tx) => {
        await tx.query(`INSERT INTO ${table} (id, writer, n) VALUES ($1, 'b', 0)`, [randomUUID()]);
        await tx.query(`INSERT INTO ${table} (id, writer, n) VALUES ($1, 'b', 1)`, [randomUUID()]);
      }, opts),
      { message: /second statement/ },
    );
    t.is(await count(db, table, `writer = 'b' AND n = 1`), 0, 'the second statement never ran');
  });

  test(title('tx does not retry other errors'), async (t) => {
    let attempts = 0;
    await t.throwsAsync(
      db.tx(async () => {
        attempts++;
        throw Object.assign(new Error('unique'), { code: '23505' });
      }),
    );
    t.is(attempts, 1);
  });

  test(title('a query outside a transaction never sees its uncommitted writes'), async (t) => {
    const table = await scratchTable(db);
    let inserted!: () => void;
    const insertedP = new Promise<void>((r) => (inserted = r));
    const txP = db.tx(async (tx) => {
      await tx.query(`INSERT INTO ${table} (id, writer) VALUES ($1, 'a')`, [randomUUID()]);
      inserted();
      await sleep(50);
      throw new Error('abandon');
    });
    await insertedP;
    // On pg this runs on another connection at once; on PGlite it waits for the transaction to end.
    t.is(await count(db, table), 0);
    await t.throwsAsync(txP, { message: 'abandon' });
    t.is(await count(db, table), 0);
  });

  // --- migrations ------------------------------------------------------------------------------------------------

  test(title('migrations are recorded once; running them again applies nothing'), async (t) => {
    t.deepEqual(await migrate(db), []);
    const rows = await db.query<{ version: number; name: string; applied_at: Date }>(
      'SELECT version, name, applied_at FROM schema_migrations ORDER BY version',
    );
    t.is(rows.rows[0]?.version, 1);
    t.is(rows.rows[0]?.name, 'init');
    t.true(rows.rows[0]?.applied_at instanceof Date);
    for (const table of ['leases', 'event_log', 'cluster_nodes']) t.is(await count(db, table, 'FALSE'), 0);
    t.is(await count(db, 'migration_lock'), 0, 'the lock row is given back');
  });

  test(title('custom migrations: applied in order, each file atomic with its record, a failure applies nothing'), async (t) => {
    const fresh = await adapter.fresh();
    t.teardown(() => fresh.cleanup());
    const files: Record<string, string> = {
      '002_second.sql': `-- a comment; with a semicolon
        CREATE TABLE m_two (id INT PRIMARY KEY, note TEXT DEFAULT 'semi;colon');
        INSERT INTO m_two (id) VALUES (2);`,
      '001_first.sql': 'CREATE TABLE m_one (id INT PRIMARY KEY); INSERT INTO m_one VALUES (1);',
    };
    const dir = await migrationsDir(t, files);
    t.deepEqual(await migrate(fresh.db, undefined, { dir }), [1, 2]);
    t.deepEqual(await migrate(fresh.db, undefined, { dir }), []);
    const note = await fresh.db.query<{ note: string }>('SELECT note FROM m_two');
    t.is(note.rows[0]?.note, 'semi;colon');

    await writeFile(path.join(dir, '003_broken.sql'), 'CREATE TABLE m_three (id INT); SELECT no_such_column FROM m_one;');
    await t.throwsAsync(migrate(fresh.db, undefined, { dir }), { message: /no_such_column/ });
    const tables = await fresh.db.query(
      `SELECT table_name FROM information_schema.tables WHERE table_name = 'm_three'`,
    );
    t.is(tables.rowCount, 0, 'the failed file left no table behind');
    t.deepEqual(
      (await fresh.db.query<{ version: number }>('SELECT version FROM schema_migrations ORDER BY version')).rows.map(
        (r) => r.version,
      ),
      [1, 2],
    );
    t.is(await count(fresh.db, 'migration_lock'), 0, 'the lock is released after a failure');

    await writeFile(path.join(dir, '003_broken.sql'), 'CREATE TABLE m_three (id INT PRIMARY KEY);');
    t.deepEqual(await migrate(fresh.db, undefined, { dir }), [3]);
  });

  test(title('migrate waits for a live lock held by another node and takes an expired one'), async (t) => {
    const fresh = await adapter.fresh();
    t.teardown(() => fresh.cleanup());
    const dir = await migrationsDir(t, { '001_only.sql': 'CREATE TABLE m_only (id INT PRIMARY KEY);' });
    await migrate(fresh.db, undefined, { dir: await migrationsDir(t, {}) });
    await fresh.db.query(
      `INSERT INTO migration_lock (id, holder, expires_at) VALUES (1, 'someone-else', now() + INTERVAL '1 hour')`,
    );
    await t.throwsAsync(migrate(fresh.db, undefined, { dir, lockWaitMs: 300 }), { message: /someone-else/ });
    await fresh.db.query(`UPDATE migration_lock SET expires_at = now() - INTERVAL '1 second'`);
    t.deepEqual(await migrate(fresh.db, undefined, { dir }), [1]);
  });

  // --- leases and fencing ----------------------------------------------------------------------------------------

  test(title('lease: acquire when free, refuse while held, re-acquire keeps the epoch, renew extends'), async (t) => {
    // Minutes, not seconds: nothing here waits for an expiry, and at four lanes a PGlite thread has taken over 10 s
    // between two of these statements (stop 35), so a 10 s lease ran out before "held by a" was asked.
    const resource = `res-${rand()}`;
    const a = await acquireLease(db, resource, 'node-a', 600_000);
    t.truthy(a);
    t.is(a!.epoch, 1);
    t.is(a!.nodeId, 'node-a');
    t.true(a!.expiresAt instanceof Date);
    t.is(await acquireLease(db, resource, 'node-b', 600_000), null, 'held by a');
    const again = await acquireLease(db, resource, 'node-a', 1_200_000);
    t.is(again!.epoch, 1, 'the holder acquiring again is a renewal');
    t.true(again!.expiresAt > a!.expiresAt);
    const renewed = await renewLease(db, a!, 1_800_000);
    t.is(renewed.epoch, 1);
    t.true(renewed.expiresAt > again!.expiresAt);
    const seen = await getLease(db, resource);
    t.is(seen?.nodeId, 'node-a');
    t.true(seen?.live);
  });

  test(title('lease: after expiry another node takes it over with a higher epoch; the old holder is LEASE_LOST'), async (t) => {
    const resource = `res-${rand()}`;
    const a = (await acquireLease(db, resource, 'node-a', 100))!;
    await sleep(250);
    t.false((await getLease(db, resource))?.live);
    const b = await acquireLease(db, resource, 'node-b', 600_000);
    t.is(b?.epoch, 2);
    t.is(b?.nodeId, 'node-b');
    const err = await t.throwsAsync(renewLease(db, a, 600_000));
    t.true(isLeaseLost(err), String(err));
    t.false(await releaseLease(db, a), 'a cannot release what it lost');
    t.is(await acquireLease(db, resource, 'node-a', 600_000), null);
  });

  test(title('lease: release lets the next node in at once, and the epoch never repeats'), async (t) => {
    const resource = `res-${rand()}`;
    const a = (await acquireLease(db, resource, 'node-a', 600_000))!;
    t.true(await releaseLease(db, a));
    const b = (await acquireLease(db, resource, 'node-b', 600_000))!;
    t.is(b.epoch, 2);
    t.true(await releaseLease(db, b));
    const a2 = (await acquireLease(db, resource, 'node-a', 600_000))!;
    t.is(a2.epoch, 3, 'the same node taking it again after a release gets a new epoch');
  });

  test(title('fencing (acceptance): a node whose lease was taken over cannot write'), async (t) => {
    const table = await scratchTable(db);
    const resource = `res-${rand()}`;
    const a = (await acquireLease(db, resource, 'node-a', 100))!;
    // While a holds the lease its fenced writes go through.
    await db.tx((tx) => fencedWrite(tx, a, `INSERT INTO ${table} (id, writer) VALUES ($1, 'a')`, [randomUUID()]));
    t.is(await count(db, table, `writer = 'a'`), 1);

    // a stalls past its expiry; b takes over.
    await sleep(250);
    const b = (await acquireLease(db, resource, 'node-b', 600_000))!;
    t.is(b.epoch, a.epoch + 1);

    // a wakes up and tries to write, either fencing first or writing first and fencing before commit.
    const first = await t.throwsAsync(
      db.tx((tx) => fencedWrite(tx, a, `INSERT INTO ${table} (id, writer) VALUES ($1, 'a')`, [randomUUID()])),
    );
    t.true(isLeaseLost(first), String(first));
    const second = await t.throwsAsync(
      db.tx(async (tx) => {
        await tx.query(`INSERT INTO ${table} (id, writer) VALUES ($1, 'a')`, [randomUUID()]);
        await assertLease(tx, a);
      }),
    );
    t.true(isLeaseLost(second), String(second));
    t.is(await count(db, table, `writer = 'a'`), 1, "nothing a wrote after losing the lease survived");

    // b writes normally.
    await db.tx((tx) => fencedWrite(tx, b, `INSERT INTO ${table} (id, writer) VALUES ($1, 'b')`, [randomUUID()]));
    t.is(await count(db, table, `writer = 'b'`), 1);
  });

  test(title('fencing: a takeover waits for a fenced transaction already in progress'), async (t) => {
    const table = await scratchTable(db);
    const resource = `res-${rand()}`;
    const a = (await acquireLease(db, resource, 'node-a', 100))!;
    await sleep(150); // expired, but nobody has taken it yet: a may still write, and holds the row while it does.
    let fenced!: () => void;
    const fencedP = new Promise<void>((r) => (fenced = r));
    const writeA = db.tx(async (tx) => {
      await assertLease(tx, a);
      fenced();
      await sleep(150);
      await tx.query(`INSERT INTO ${table} (id, writer) VALUES ($1, 'a')`, [randomUUID()]);
    });
    await fencedP;
    const b = await acquireLease(db, resource, 'node-b', 600_000);
    const outcome = await writeA.then(
      () => 'committed' as const,
      (err: unknown) => (isLeaseLost(err) ? ('lease-lost' as const) : Promise.reject(err)),
    );
    t.is(b?.epoch, a.epoch + 1);
    if (outcome === 'lease-lost') {
      // Only under injected faults: a 40001 aborted a's transaction after its fence check, b took over while a
      // backed off, and a's retry was rightly refused. Nothing of a's may be written then.
      t.true(adapter.faultInjected, 'a fenced transaction in progress loses its lease only if it had to retry');
      t.is(await count(db, table, `writer = 'a'`), 0, "a's refused retry wrote nothing");
    } else {
      t.is(await count(db, table, `writer = 'a'`), 1, "a's write committed before b's takeover");
    }
    const late = await t.throwsAsync(db.tx((tx) => assertLease(tx, a)));
    t.true(isLeaseLost(late));
  });

  test(title('row fencing: claimRow/fencedUpdate on cluster_nodes; a taken-over claim changes nothing'), async (t) => {
    const nodeId = `node-${rand()}`;
    await db.query(
      `INSERT INTO cluster_nodes (node_id, role, status, tags, registered_at, updated_at)
       VALUES ($1, 'worker', 'ACTIVE', $2, now(), now())`,
      [nodeId, JSON.stringify(['gpu'])],
    );
    const a = await claimRow<{ node_id: string; tags: string[]; epoch: number }>(
      db, 'cluster_nodes', 'node_id', nodeId, 'ctrl-a', 600_000,
    );
    t.truthy(a);
    t.is(a!.epoch, 1);
    t.deepEqual(a!.row.tags, ['gpu']);
    t.is(await claimRow(db, 'cluster_nodes', 'node_id', nodeId, 'ctrl-b', 600_000), null, 'held by ctrl-a');

    const updated = await fencedUpdate<{ heartbeat_count: number; status: string }>(
      db, a!, 'heartbeat_count = heartbeat_count + $1, status = $2', [5, 'DRAINING'],
    );
    t.is(updated.heartbeat_count, 5);
    t.is(updated.status, 'DRAINING');
    // Renewing with a short ttl, then stalling past it: the claim expires.
    const renewed = await renewRow(db, a!, 100);
    t.is(renewed.epoch, 1);
    t.true(renewed.expiresAt < a!.expiresAt);

    await sleep(250);
    const b = await claimRow(db, 'cluster_nodes', 'node_id', nodeId, 'ctrl-b', 600_000, {
      where: `status <> 'DEREGISTERED'`,
    });
    t.is(b?.epoch, 2);
    const err = await t.throwsAsync(
      db.tx((tx) => fencedUpdate(tx, a!, 'heartbeat_count = heartbeat_count + 1, status = $1', ['UNHEALTHY'])),
    );
    t.true(isLeaseLost(err), String(err));
    const row = await db.query<{ heartbeat_count: number; status: string; owner_node: string }>(
      'SELECT heartbeat_count, status, owner_node FROM cluster_nodes WHERE node_id = $1',
      [nodeId],
    );
    t.deepEqual(row.rows[0], { heartbeat_count: 5, status: 'DRAINING', owner_node: 'ctrl-b' });

    await releaseRow(db, b!);
    const c = await claimRow(db, 'cluster_nodes', 'node_id', nodeId, 'ctrl-a', 600_000);
    t.is(c?.epoch, 3, 'released rows are claimable at once, with a new epoch');
    const again = await claimRow(db, 'cluster_nodes', 'node_id', nodeId, 'ctrl-a', 600_000);
    t.is(again?.epoch, 4, 'claiming again (a new incarnation) fences the previous one');
    t.true(isLeaseLost(await t.throwsAsync(fencedUpdate(db, c!, 'heartbeat_count = 0'))));
  });

  test(title('row fencing refuses unsafe identifiers'), async (t) => {
    await t.throwsAsync(claimRow(db, 'cluster_nodes; DROP TABLE leases', 'node_id', 'x', 'n', 1000), {
      message: /not a safe SQL identifier/,
    });
    await t.throwsAsync(
      fencedUpdate(db, { table: 'cluster_nodes', keyColumn: 'Node_Id', key: 'x', nodeId: 'n', epoch: 1 }, 'epoch = 1'),
      { message: /not a safe SQL identifier/ },
    );
  });

  // --- event log -------------------------------------------------------------------------------------------------

  test(title('event log: per-stream sequence from 1, history reads from a seq with a limit'), async (t) => {
    const s1 = `stream-${rand()}`;
    const s2 = `stream-${rand()}`;
    const e1 = await db.tx((tx) => appendEvent(tx, s1, 'created', { n: 1 }));
    const e2 = await db.tx((tx) => appendEvent(tx, s1, 'updated', { n: 2, list: [1, 2] }));
    const other = await db.tx((tx) => appendEvent(tx, s2, 'created', null));
    const both = await db.tx(async (tx) => [await appendEvent(tx, s1, 'a', {}), await appendEvent(tx, s1, 'b', {})]);
    t.deepEqual([e1.seq, e2.seq, other.seq, both[0]!.seq, both[1]!.seq], [1, 2, 1, 3, 4]);
    t.is(e1.stream, s1);
    t.is(e1.type, 'created');
    t.deepEqual(e1.payload, { n: 1 });
    t.is(other.payload, null);
    t.is(new Date(e1.at).toISOString(), e1.at, 'at is ISO 8601');

    const history = new DbHistorySource(db);
    const all = await history.read(s1, 1, 100);
    t.deepEqual(all.map((e) => e.seq), [1, 2, 3, 4]);
    t.deepEqual(all[1], e2);
    t.deepEqual((await history.read(s1, 2, 2)).map((e) => e.seq), [2, 3]);
    t.deepEqual(await history.read(s1, 5, 10), []);
    t.deepEqual(await history.read(`stream-${rand()}`, 1, 10), []);
  });

  test(title('event log: a rolled-back append leaves no hole in the sequence'), async (t) => {
    const s = `stream-${rand()}`;
    await db.tx((tx) => appendEvent(tx, s, 'one', {}));
    await t.throwsAsync(
      db.tx(async (tx) => {
        await appendEvent(tx, s, 'lost', {});
        throw new Error('abandon');
      }),
    );
    const next = await db.tx((tx) => appendEvent(tx, s, 'two', {}));
    t.is(next.seq, 2);
  });

  test(title('event log: concurrent appends to one stream get 1..N, each exactly once'), async (t) => {
    const s = `stream-${rand()}`;
    const n = 12;
    const events = await Promise.all(
      Array.from({ length: n }, (_, i) => db.tx((tx) => appendEvent(tx, s, 'tick', { i }))),
    );
    t.deepEqual(
      events.map((e) => e.seq).sort((x, y) => x - y),
      Array.from({ length: n }, (_, i) => i + 1),
    );
    const stored = await new DbHistorySource(db).read(s, 1, 100);
    t.deepEqual(
      stored.map((e) => (e.payload as { i: number }).i).sort((x, y) => x - y),
      Array.from({ length: n }, (_, i) => i),
    );
  });
}
