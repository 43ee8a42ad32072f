// The quota across real processes: two child processes (8 writers each) race on one volume through the same
// PostgreSQL database and data dir while this process samples used_bytes. The limit holds at every sample, some
// writes get ENOSPC, used_bytes ends equal to the bytes on disk and every file is one writer's whole payload.
import { spawn } from 'node:child_process';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import test from 'ava';
import { treeSize } from '../../src/volumes/disk.ts';
import { createTestDatabase } from '../support/pg.ts';
import { mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import { openDb } from '../../src/storage/open.ts';
import { silentLogger } from '../../src/logging/logger.ts';
import { VolumeService } from '../../src/volumes/service.ts';

const WRITER = path.join(path.dirname(fileURLToPath(import.meta.url)), 'fixtures', 'writer.ts');

function runWriter(args: string[]): Promise<{ written: number; full: number }> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, ['--import', 'tsx', WRITER, ...args], { stdio: ['ignore', 'pipe', 'pipe'] });
    let out = '';
    let err = '';
    child.stdout.on('data', (d: Buffer) => (out += d.toString()));
    child.stderr.on('data', (d: Buffer) => (err += d.toString()));
    child.on('error', reject);
    child.on('exit', (code) => {
      if (code !== 0) reject(new Error(`writer exited with ${code}: ${err}`));
      else resolve(JSON.parse(out.trim()) as { written: number; full: number });
    });
  });
}

test('16 writers in two processes never exceed the quota; usage stays exact; no file is corrupted', async (t) => {
  const tdb = await createTestDatabase({ migrated: true });
  const dataDir = await mkdtemp(path.join(os.tmpdir(), 'orch-volumes-xproc-'));
  const db = await openDb({ url: tdb.url, dataDir }, silentLogger());
  t.teardown(async () => {
    await db.close();
    await tdb.drop();
    await rm(dataDir, { recursive: true, force: true });
  });
  const nodeId = 'node-x';
  const volumes = new VolumeService({ db, dataDir, nodeId, logger: silentLogger() });
  const LIMIT = 400_000;
  const v = await volumes.create({ tenantId: 'acme', ownerSubject: 'alice', label: 'xproc', sizeLimitBytes: LIMIT });

  let peak = 0;
  let sampling = true;
  let samples = 0;
  const sampler = (async () => {
    while (sampling) {
      peak = Math.max(peak, (await volumes.get('acme', v.id)).used_bytes);
      samples += 1;
      await new Promise((r) => setTimeout(r, 10));
    }
  })();
  const results = await Promise.all(['p', 'q'].map((prefix) => runWriter([tdb.url, dataDir, nodeId, 'acme', v.id, prefix, '8'])));
  sampling = false;
  await sampler;

  const written = results.reduce((n, r) => n + r.written, 0);
  const full = results.reduce((n, r) => n + r.full, 0);
  t.log(`writes: ${written} ok, ${full} ENOSPC; ${samples} samples, peak used ${peak} of ${LIMIT}`);
  t.true(written > 20);
  t.true(full > 0, 'the volume filled up (the race was real)');
  t.true(peak <= LIMIT);
  const root = await volumes.hostPath('acme', v.id);
  const final = await volumes.get('acme', v.id);
  t.true(final.used_bytes <= LIMIT);
  t.is(final.used_bytes, (await treeSize(root)).bytes, 'used_bytes equals the bytes on disk');

  let files = 0;
  const walk = async (rel: string): Promise<void> => {
    for (const e of await volumes.listDir('acme', v.id, rel)) {
      if (e.type === 'directory') {
        await walk(e.path);
        continue;
      }
      files += 1;
      const data = await volumes.readFile('acme', v.id, e.path);
      const m = /^([pq])(\d+)-(\d+)-(\d+)\.*/.exec(data.subarray(0, 24).toString('latin1'));
      t.truthy(m, `${e.path} has a header`);
      const w = Number(m![2]);
      t.is(data.length, Number(m![4]), `${e.path} has its header's length`);
      t.true(data.subarray(24).every((b) => b === 65 + (w % 26)), `${e.path} is one writer's whole payload`);
      t.true(e.path.startsWith(`/${m![1]}/w${w}/`), `${e.path} was written by its own writer`);
    }
  };
  await walk('/');
  t.true(files > 0);
});
