// VolumeService throughput on PostgreSQL against the bare local disk, the cost of exact quota accounting (one
// conditional UPDATE per change): small whole-file writes (4 KiB, 1 and 16 concurrent writers), sequential
// positional writes of 128 KiB chunks (FUSE-sized) and whole-file reads. Medians of --runs runs.
// Run: `tsx bench/volumes.ts [--runs N]`.
import { mkdir, mkdtemp, open, readFile, rename, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { silentLogger } from '../src/logging/logger.ts';
import { openDb } from '../src/storage/open.ts';
import { VolumeService } from '../src/volumes/service.ts';
import { createTestDatabase } from '../test/support/pg.ts';
import { median } from './stats.ts';

function arg(name: string, fallback: number): number {
  const i = process.argv.indexOf(`--${name}`);
  const v = i >= 0 ? Number(process.argv[i + 1]) : Number.NaN;
  return Number.isFinite(v) && v > 0 ? v : fallback;
}

const RUNS = arg('runs', 3);
const SMALL = 4096;
const SMALL_FILES = 400;
const CHUNK = 128 * 1024;
const BIG = 64 * 1024 * 1024;

function report(name: string, samples: number[], unit: string): void {
  process.stdout.write(`${name.padEnd(58)} median ${median(samples).toFixed(0).padStart(7)} ${unit}   runs: ${samples.map((x) => x.toFixed(0)).join(', ')}\n`);
}

async function timed(fn: () => Promise<void>): Promise<number> {
  const t0 = process.hrtime.bigint();
  await fn();
  return Number(process.hrtime.bigint() - t0) / 1e9;
}

async function parallel(n: number, total: number, one: (i: number) => Promise<void>): Promise<void> {
  let next = 0;
  await Promise.all(
    Array.from({ length: n }, async () => {
      while (next < total) await one(next++);
    }),
  );
}

/** What the service does for a whole-file write, minus the database: staging file, rename. */
async function diskWrite(root: string, rel: string, data: Buffer, i: number): Promise<void> {
  const tmp = path.join(root, '.staging', `${i}-${Math.random()}.tmp`);
  await writeFile(tmp, data);
  await mkdir(path.dirname(path.join(root, rel)), { recursive: true });
  await rename(tmp, path.join(root, rel));
}

/** Runs the bench `runs` times and prints the medians; importing this module runs nothing. */
export async function benchVolumes(runs: number): Promise<void> {
  const tdb = await createTestDatabase();
  const dataDir = await mkdtemp(path.join(os.tmpdir(), 'orch-bench-volumes-'));
  const db = await openDb({ url: tdb.url, dataDir, poolSize: 20 }, silentLogger());
  const volumes = new VolumeService({ db, dataDir, nodeId: 'bench', logger: silentLogger() });
  try {
    const small = Buffer.alloc(SMALL, 7);
    const chunk = Buffer.alloc(CHUNK, 9);
    const out: Record<string, number[]> = {};
    const add = (k: string, v: number): void => void (out[k] ??= []).push(v);
    for (let r = 0; r < runs; r++) {
      for (const writers of [1, 16]) {
        const v = await volumes.create({ tenantId: 'bench', ownerSubject: 'bench', label: `small-${r}-${writers}`, sizeLimitBytes: 1024 ** 3 });
        const s = await timed(() => parallel(writers, SMALL_FILES, (i) => volumes.writeFile('bench', v.id, `/d${i % 16}/f${i}.bin`, small).then(() => undefined)));
        add(`service: 4 KiB whole-file writes, ${writers} writer(s)`, SMALL_FILES / s);
        await volumes.delete('bench', v.id);
        const disk = await mkdtemp(path.join(dataDir, 'disk-'));
        await mkdir(path.join(disk, '.staging'));
        const d = await timed(() => parallel(writers, SMALL_FILES, (i) => diskWrite(disk, `d${i % 16}/f${i}.bin`, small, i)));
        add(`disk:    4 KiB whole-file writes, ${writers} writer(s)`, SMALL_FILES / d);
        await rm(disk, { recursive: true, force: true });
      }

      const v = await volumes.create({ tenantId: 'bench', ownerSubject: 'bench', label: `seq-${r}`, sizeLimitBytes: 1024 ** 3 });
      await volumes.createFile('bench', v.id, '/big.bin');
      const w = await timed(async () => {
        for (let off = 0; off < BIG; off += CHUNK) await volumes.writeAt('bench', v.id, '/big.bin', off, chunk);
      });
      add('service: sequential writeAt, 128 KiB chunks', BIG / 1024 ** 2 / w);
      const rd = await timed(async () => {
        for (let off = 0; off < BIG; off += CHUNK) await volumes.readFile('bench', v.id, '/big.bin', { offset: off, length: CHUNK });
      });
      add('service: sequential readFile ranges, 128 KiB chunks', BIG / 1024 ** 2 / rd);
      await volumes.delete('bench', v.id);

      const file = path.join(dataDir, `disk-big-${r}.bin`);
      const fh = await open(file, 'w');
      const dw = await timed(async () => {
        for (let off = 0; off < BIG; off += CHUNK) await fh.write(chunk, 0, CHUNK, off);
      });
      await fh.close();
      add('disk:    sequential pwrite, 128 KiB chunks', BIG / 1024 ** 2 / dw);
      const rh = await open(file, 'r');
      const buf = Buffer.alloc(CHUNK);
      const dr = await timed(async () => {
        for (let off = 0; off < BIG; off += CHUNK) await rh.read(buf, 0, CHUNK, off);
      });
      await rh.close();
      add('disk:    sequential pread, 128 KiB chunks', BIG / 1024 ** 2 / dr);
      await readFile(file).then(() => rm(file));
    }
    for (const [k, v] of Object.entries(out)) report(k, v, k.includes('writes,') ? 'files/s' : 'MB/s');
  } finally {
    await db.close();
    await tdb.drop();
    await rm(dataDir, { recursive: true, force: true });
  }
}

// Run only when executed (`tsx bench/volumes.ts`), not when imported.
if (import.meta.url === `file://${process.argv[1]}`) {
  await benchVolumes(RUNS);
}
