// The volume's used_bytes under FSAL Writes of one path in flight together, landing out of order (what a FUSE mount
// with several Writes in flight, or any gRPC client, sends). Real FsalService, real VolumeService with the quota
// reserved ahead in chunks (as the node runs it), real PostgreSQL.
//
// used_bytes as callers read it (VolumeService.get: the row minus what this process reserved ahead and has not
// written) was read without regard to a pool statement in flight: the row and the pool were read at two moments.
// The answer of a reservation ahead (or of the idle give-back) arriving between them made it wrong by a chunk: a
// clean-clone CI run of test/fuse/write-pipeline.test.ts read used_bytes apart from the bytes on disk, intermittently
// (the give-back fires 250 ms after the last Write, while that test read the volume back). Here the answers of those
// two statements are held open, so the moment is always there: get() must still answer what is on disk plus what
// the Writes still running have reserved, never more than the file becomes, never less than the disk.
// recount() (a tool wrote into the directory) set used_bytes to the disk with a pool held: the pool, given back
// later, took its bytes off a row that no longer counted them.
import { randomUUID } from 'node:crypto';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import test, { type ExecutionContext } from 'ava';
import { insertExecution } from '../../src/agents/execution/repo.ts';
import { FsalService } from '../../src/fsal/service.ts';
import { silentLogger } from '../../src/logging/logger.ts';
import type { Db } from '../../src/storage/db.ts';
import { openDb } from '../../src/storage/open.ts';
import { treeSize } from '../../src/volumes/disk.ts';
import { VolumeService } from '../../src/volumes/service.ts';
import { createTestDatabase } from '../support/pg.ts';
import { agentManifest, TENANT } from './support.ts';

const MiB = 1024 * 1024;

/** A gate the test opens: statements it matches are run, and their answers held until open() (or at once when open). */
interface Hold {
  held: number;
  open(): void;
  close(): void;
  /** Resolves once a matched statement's answer is being held. */
  reached(): Promise<void>;
}

/**
 * `db` whose quota pool statements (the reservation ahead, a give-back) run at once but answer only when the hold is
 * open: the row has changed, the caller has not heard it yet — a loaded database answering late.
 */
function holdingPoolAnswers(db: Db): { db: Db; hold: Hold } {
  let gate: Promise<void> | undefined;
  let openGate: () => void = () => undefined;
  let waiters: Array<() => void> = [];
  const hold: Hold = {
    held: 0,
    open() {
      openGate();
      gate = undefined;
    },
    close() {
      gate = new Promise((r) => (openGate = r));
    },
    reached: () => new Promise((r) => waiters.push(r)),
  };
  const isPool = (text: string, params?: unknown[]): boolean =>
    text.includes('AS take') || (/SET used_bytes = GREATEST\(used_bytes \+ \$3, 0\)/.test(text) && typeof params?.[2] === 'number' && params[2] < 0);
  const wrapped: Db = {
    kind: db.kind,
    tx: db.tx.bind(db),
    ping: db.ping.bind(db),
    close: db.close.bind(db),
    query: (async (text: string, params?: unknown[]) => {
      const res = await db.query(text, params);
      if (gate && isPool(text, params)) {
        hold.held += 1;
        const w = waiters;
        waiters = [];
        for (const r of w) r();
        await gate;
      }
      return res;
    }) as Db['query'],
  };
  return { db: wrapped, hold };
}

async function setup(t: ExecutionContext): Promise<{ db: Db; hold: Hold; volumes: VolumeService; fsal: FsalService; vol: string; exec: string; host: string }> {
  const dataDir = await mkdtemp(path.join(os.tmpdir(), 'orch-fsal-quota-'));
  const tdb = await createTestDatabase({ migrated: true });
  const raw = await openDb({ url: tdb.url, dataDir, poolSize: 10 }, silentLogger());
  const { db, hold } = holdingPoolAnswers(raw);
  const volumes = new VolumeService({ db, dataDir, nodeId: 'node-fsal', logger: silentLogger(), quotaChunkBytes: 8 * MiB, quotaIdleMs: 60_000 });
  const fsal = new FsalService({ db: raw, volumes, logger: silentLogger() });
  t.teardown(async () => {
    hold.open();
    await fsal.close();
    await volumes.releaseReservations();
    await raw.close();
    await tdb.drop();
    await rm(dataDir, { recursive: true, force: true });
  });
  const exec = randomUUID();
  await insertExecution(raw, { id: exec, tenantId: TENANT, agentId: randomUUID(), agentName: 'fsal-agent', agentVersion: '1.0.0', manifest: agentManifest(), input: 'x', ownerNode: 'node-fsal', leaseMs: 60_000 });
  await raw.query(`UPDATE executions SET status = 'running' WHERE id = $1`, [exec]);
  const vol = (await volumes.create({ tenantId: TENANT, ownerSubject: 'user', label: 'in-flight', sizeLimitBytes: 1024 * MiB, owner: { kind: 'execution', ref: exec } })).id;
  return { db: raw, hold, volumes, fsal, vol, exec, host: await volumes.hostPath(TENANT, vol) };
}

const rowUsed = async (db: Db, vol: string): Promise<number> =>
  Number((await db.query<{ used_bytes: string }>('SELECT used_bytes FROM volumes WHERE id = $1', [vol])).rows[0]!.used_bytes);

test('FSAL Writes of one path in flight, out of order: used_bytes never reads past the file or below the disk, and is the disk once they are done', async (t) => {
  const { db, hold, volumes, fsal, vol, exec, host } = await setup(t);
  const caller = { tenantId: TENANT };
  const ids = { execution_id: exec, volume_id: vol };
  await fsal.create(caller, { ...ids, path: 'p.bin', mode: 0, exclusive: true });
  const BLOCKS = 8;
  const order = [1, 2, 0, 3, 5, 4, 7, 6];

  // The first Write to land (block 1) grows the file by 2 MiB and takes a chunk ahead; its answer is held while
  // the rest are sent and a reader asks the volume's usage.
  hold.close();
  const reached = hold.reached();
  const writes = order.map((b) => fsal.write(caller, { ...ids, path: 'p.bin', offset: b * MiB, data: Buffer.alloc(MiB, b + 1) }));
  await reached;
  const during = volumes.get(TENANT, vol).then((v) => v.used_bytes);
  await new Promise((r) => setTimeout(r, 100));
  hold.open();
  await Promise.all(writes);
  const readDuring = await during;
  const disk = (await treeSize(host)).bytes;
  t.is(disk, BLOCKS * MiB);
  t.log(`used_bytes read while the reservation's answer was on its way: ${readDuring} (the file becomes ${disk})`);
  t.true(readDuring <= disk, `used_bytes ${readDuring} read past what the Writes make the file (${disk}): the chunk reserved ahead counted as used`);
  t.is((await volumes.get(TENANT, vol)).used_bytes, disk, 'the Writes done: used_bytes is the disk');

  // The give-back of the unused chunk (the idle timer's, or at shutdown; started here so that it is the held one):
  // its answer held, a reader asks.
  hold.close();
  const back = hold.reached();
  const released = volumes.releaseReservations();
  await back;
  const atGiveBack = volumes.get(TENANT, vol).then((v) => v.used_bytes);
  await new Promise((r) => setTimeout(r, 100));
  hold.open();
  await released;
  const readAtGiveBack = await atGiveBack;
  t.log(`used_bytes read while the give-back's answer was on its way: ${readAtGiveBack}`);
  t.is(readAtGiveBack, disk, 'the bytes given back are not taken off twice');
  t.is(await rowUsed(db, vol), disk, 'the row, every reservation given back');
});

test('recount() with quota reserved ahead: the row is the disk once the pool is given back', async (t) => {
  const { db, volumes, fsal, vol, exec, host } = await setup(t);
  const caller = { tenantId: TENANT };
  const ids = { execution_id: exec, volume_id: vol };
  await fsal.create(caller, { ...ids, path: 'a.bin', mode: 0, exclusive: true });
  await Promise.all([2, 0, 1].map((b) => fsal.write(caller, { ...ids, path: 'a.bin', offset: b * MiB, data: Buffer.alloc(MiB, b + 1) })));
  t.true((await rowUsed(db, vol)) > 3 * MiB, 'a chunk is reserved ahead');
  // A tool writes into the directory itself, then recounts (as the git tools do).
  await writeFile(path.join(host, 'tool.txt'), Buffer.alloc(1000, 7));
  const q = await volumes.recount(TENANT, vol);
  const disk = (await treeSize(host)).bytes;
  t.is(disk, 3 * MiB + 1000);
  t.is(q.used_bytes, disk);
  await fsal.write(caller, { ...ids, path: 'a.bin', offset: 3 * MiB, data: Buffer.alloc(MiB, 4) });
  await volumes.releaseReservations();
  t.is((await volumes.get(TENANT, vol)).used_bytes, disk + MiB);
  t.is(await rowUsed(db, vol), disk + MiB, 'the row is the disk: the pool was not taken off a recounted row');
});
