// The shared leased-row actor half (src/actors/leased-row/) on real PostgreSQL and the real actor runtime, over a
// table of its own: the claim takes a new epoch, the claim is kept alive (per row, or by the batched renewer), a
// cancel asked through the row reaches the run, and an actor whose claim another node took stops without touching
// the row again. Recovery finds its own, unowned and expired active rows, never another node's live claim.
import test from 'ava';
import { ActorRuntime } from '../../src/actors/runtime.ts';
import type { ActorHandle, ActorKind } from '../../src/actors/kind.ts';
import { LeasedRowBehaviour, type LeasedRowMessage, type LeasedRowSettings } from '../../src/actors/leased-row/behaviour.ts';
import { activeWhere, recoverableRowKeys, type LeasedTable } from '../../src/actors/leased-row/table.ts';
import { CancelledByUser } from '../../src/agents/execution/errors.ts';
import { silentLogger } from '../../src/logging/logger.ts';
import { LeaseRenewer } from '../../src/storage/lease-renewer.ts';
import { openPg } from '../../src/storage/pg.ts';
import { claimRow, type RowClaim } from '../../src/storage/row-lease.ts';
import type { Db } from '../../src/storage/db.ts';
import { createTestDatabase } from '../support/pg.ts';
import { eventually } from '../support/node-process.ts';

const JOBS: LeasedTable = { table: 'jobs', keyColumn: 'id', activeStatuses: ['pending', 'running'] };

interface JobRow {
  id: string;
  status: string;
  cancel_requested: boolean;
  owner_node: string | null;
  epoch: number;
  lease_expires_at: Date | null;
}

async function setup(t: import('ava').ExecutionContext): Promise<Db> {
  const database = await createTestDatabase({ migrated: true });
  const db = await openPg(database.url, { logger: silentLogger() });
  t.teardown(async () => {
    await db.close();
    await database.drop();
  });
  await db.query(`CREATE TABLE jobs (id TEXT PRIMARY KEY, status TEXT NOT NULL, cancel_requested BOOLEAN NOT NULL DEFAULT FALSE,
    owner_node TEXT, epoch INT4 NOT NULL DEFAULT 0, lease_expires_at TIMESTAMPTZ, created_at TIMESTAMPTZ NOT NULL DEFAULT clock_timestamp())`);
  return db;
}

/** What the test sees of each run: the claim it ran under and why it was aborted. */
interface Seen {
  claims: RowClaim<JobRow>[];
  aborted: unknown[];
}

/** A run that holds until aborted: a cancel ends it (the row turns cancelled, as the real runs do); anything else rejects. */
class JobBehaviour extends LeasedRowBehaviour<JobRow> {
  constructor(
    private readonly db: Db,
    ls: LeasedRowSettings,
    actor: ActorHandle<LeasedRowMessage>,
    private readonly seen: Seen,
  ) {
    super(JOBS, ls, { logKey: 'job', run: 'job', lease: 'job' }, actor);
  }

  protected run(claim: RowClaim<JobRow>, signal: AbortSignal): Promise<void> {
    this.seen.claims.push(claim);
    return new Promise((resolve, reject) => {
      const stop = (): void => {
        this.seen.aborted.push(signal.reason);
        if (signal.reason instanceof CancelledByUser) {
          this.db.query(`UPDATE jobs SET status = 'cancelled' WHERE id = $1`, [claim.key]).then(() => resolve(), reject);
        } else reject(signal.reason as Error);
      };
      if (signal.aborted) stop();
      else signal.addEventListener('abort', stop, { once: true });
    });
  }
}

function start(t: import('ava').ExecutionContext, ls: LeasedRowSettings): { runtime: ActorRuntime; seen: Seen } {
  const runtime = new ActorRuntime(silentLogger(), `leased-${Math.random().toString(36).slice(2)}`);
  const seen: Seen = { claims: [], aborted: [] };
  const kind: ActorKind<LeasedRowMessage> = {
    name: 'job',
    recoverableKeys: () => recoverableRowKeys(ls.db, JOBS, ls.nodeId),
    create: (handle) => new JobBehaviour(ls.db as Db, ls, handle, seen),
    giveUp: async () => undefined,
  };
  runtime.register(kind);
  t.teardown(() => runtime.shutdown(1000));
  return { runtime, seen };
}

async function row(db: Db, id: string): Promise<JobRow> {
  return (await db.query<JobRow>('SELECT * FROM jobs WHERE id = $1', [id])).rows[0]!;
}

async function takeOver(db: Db, id: string, node: string): Promise<RowClaim<JobRow>> {
  await db.query(`UPDATE jobs SET lease_expires_at = now() - INTERVAL '1 second' WHERE id = $1`, [id]);
  const c = await claimRow<JobRow>(db, 'jobs', 'id', id, node, 60_000);
  if (!c) throw new Error('take-over failed');
  return c;
}

test('per-row renewal keeps the claim; an actor whose row another node claimed stops and leaves the row alone', async (t) => {
  const db = await setup(t);
  await db.query(`INSERT INTO jobs (id, status, owner_node, epoch, lease_expires_at) VALUES ('j1', 'running', 'node-a', 0, now())`);
  const leaseMs = 1_500;
  const { runtime, seen } = start(t, { db, nodeId: 'node-a', leaseMs, logger: silentLogger() });
  runtime.spawn('job', 'j1');
  const claim = await eventually(async () => seen.claims[0], 30_000, 'the claim');
  t.is(claim.epoch, 1, 'recovery claims anew: a new epoch');
  // Renewed by the actor itself: the expiry moves past the claim's own.
  await eventually(async () => ((await row(db, 'j1')).lease_expires_at!.getTime() > claim.expiresAt.getTime() ? true : undefined), 30_000, 'a renewal');

  const b = await takeOver(db, 'j1', 'node-b');
  await eventually(async () => (runtime.isLive('job', 'j1') ? undefined : true), 30_000, 'the actor to stop');
  t.is((seen.aborted[0] as { code?: string }).code, 'lease_lost');
  const after = await row(db, 'j1');
  t.deepEqual([after.owner_node, after.epoch, after.lease_expires_at?.getTime()], ['node-b', b.epoch, b.expiresAt.getTime()], 'the old owner neither renewed nor released the row');
});

test('with the batched renewer: a cancel asked through the row reaches the run, and a lost claim stops the actor', async (t) => {
  const db = await setup(t);
  await db.query(`INSERT INTO jobs (id, status) VALUES ('j1', 'pending'), ('j2', 'running')`);
  const renewer = new LeaseRenewer(db, { table: 'jobs', keyColumn: 'id', keyType: 'TEXT', nodeId: 'node-a', ttlMs: 60_000, columns: ['cancel_requested'], logger: silentLogger() });
  const { runtime, seen } = start(t, { db, nodeId: 'node-a', leaseMs: 60_000, logger: silentLogger(), renewer });
  runtime.spawn('job', 'j1');
  runtime.spawn('job', 'j2');
  await eventually(async () => (seen.claims.length === 2 && renewer.size === 2 ? true : undefined), 30_000, 'both held by the renewer');

  await db.query(`UPDATE jobs SET cancel_requested = TRUE WHERE id = 'j1'`);
  await takeOver(db, 'j2', 'node-b');
  t.deepEqual(await renewer.tick(), { renewed: 1, skipped: 0, lost: 1 });
  await eventually(async () => (seen.aborted.length === 2 ? true : undefined), 30_000, 'both runs aborted');
  const reasons = seen.aborted.map((r) => (r as { code?: string; name?: string }).code ?? (r as Error).name).sort();
  t.deepEqual(reasons, ['CancelledByUser', 'lease_lost']);
  // The cancelled run ended and the lost one handed over: both left the runtime, and the renewer holds neither.
  await eventually(async () => (runtime.isLive('job', 'j1') || runtime.isLive('job', 'j2') ? undefined : true), 30_000, 'both actors to stop');
  t.is(renewer.size, 0);
  t.is((await row(db, 'j1')).status, 'cancelled');
  t.is((await row(db, 'j2')).owner_node, 'node-b');
});

test('recovery finds own, unowned and expired active rows only; an unsafe status word is refused', async (t) => {
  const db = await setup(t);
  await db.query(`INSERT INTO jobs (id, status, owner_node, lease_expires_at) VALUES
    ('own', 'running', 'node-a', now() + INTERVAL '1 minute'),
    ('free', 'pending', NULL, NULL),
    ('expired', 'running', 'node-b', now() - INTERVAL '1 second'),
    ('theirs', 'running', 'node-b', now() + INTERVAL '1 minute'),
    ('done', 'completed', NULL, NULL)`);
  t.deepEqual(await recoverableRowKeys(db, JOBS, 'node-a'), ['own', 'free', 'expired']);
  t.is(activeWhere(JOBS), `status IN ('pending', 'running')`);
  t.throws(() => activeWhere({ ...JOBS, activeStatuses: ["x') OR TRUE --"] }), { message: /not a safe SQL identifier/ });
});
