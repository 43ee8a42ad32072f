// Where a FUSE `dd` write's time goes: one mount (the bench's setup: FUSE daemon callbacks, gRPC client and server,
// FsalService in this process), `dd if=/dev/zero bs=1M` of 64 MiB, N times. Reports per run MB/s, the kernel write
// requests' sizes, FSAL Writes and database statements (count and summed time) per MiB, and this process's CPU per
// MiB; with CPU_PROFILE=<file> a V8 CPU profile of the dd windows only (bench/profile-summary.ts summarises it).
// Run: `tsx bench/fsal-dd-profile.ts [runs]`.
import { execFile } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { Session } from 'node:inspector/promises';
import os from 'node:os';
import path from 'node:path';
import { MountManager } from '../src/fuse/mounts.ts';
import { silentLogger } from '../src/logging/logger.ts';
import type { Db, Queryable } from '../src/storage/db.ts';
import { fsalFixture, TENANT } from '../test/fsal/support.ts';
import { median } from './stats.ts';

const MB = 64;
const runs = Number(process.argv[2] ?? 3);

function sh(script: string): Promise<void> {
  return new Promise((resolve, reject) => execFile('sh', ['-c', script], (err, _o, stderr) => (err ? reject(new Error(`${script}: ${stderr || err.message}`)) : resolve())));
}

const meter = { statements: 0, ms: 0 };
function wrap(db: Db): void {
  const timed = (run: Queryable['query']): Queryable['query'] =>
    (async (sql: string, params?: readonly unknown[], options?: unknown) => {
      const t0 = performance.now();
      try {
        return await (run as (s: string, p?: readonly unknown[], o?: unknown) => Promise<never>)(sql, params, options);
      } finally {
        meter.statements += 1;
        meter.ms += performance.now() - t0;
      }
    }) as Queryable['query'];
  const q = db.query.bind(db);
  const tx = db.tx.bind(db);
  (db as { query: Queryable['query'] }).query = timed(q);
  (db as { tx: Db['tx'] }).tx = (async (fn: (t: Queryable) => Promise<unknown>) => {
    meter.statements += 2;
    return tx((t) => fn({ query: timed(t.query.bind(t)) }));
  }) as Db['tx'];
}

const f = await fsalFixture();
wrap(f.db);
const prefix = await mkdtemp(path.join(os.tmpdir(), 'orch-ddprof-'));
const writes: number[] = [];
let fsalWrites = 0;
const origWrite = f.fsal.write.bind(f.fsal);
f.fsal.write = ((c, r) => {
  fsalWrites += 1;
  return origWrite(c, r);
}) as typeof f.fsal.write;
// Streamed Writes (FsalExtensionService, where the build has it) are counted too.
const streamed = (f.fsal as unknown as { writeInOrder?: (...a: unknown[]) => unknown }).writeInOrder?.bind(f.fsal);
if (streamed) (f.fsal as unknown as { writeInOrder: (...a: unknown[]) => unknown }).writeInOrder = (...a: unknown[]) => {
  fsalWrites += 1;
  return streamed(...a);
};
const session = new Session();
const profile = process.env.CPU_PROFILE;
try {
  const exec = await f.execution();
  const vol = await f.volume({ limit: 2 * MB * 1024 * 1024 });
  await f.grant(exec, vol);
  const token = await f.idp.sign({ sub: 'svc-bench', preferred_username: 'service-account-bench' });
  const mounts = new MountManager({ mountPrefix: prefix, fsal: { address: f.address, token }, logger: silentLogger(), operations: { observe: (op, len) => op === 'write' && writes.push(len) } });
  try {
    const mnt = await mounts.mount({ execution_id: exec, volume_id: vol, tenant_id: TENANT });
    if (profile) {
      session.connect();
      await session.post('Profiler.enable');
      await session.post('Profiler.setSamplingInterval', { interval: 200 });
      await session.post('Profiler.start');
    }
    const mbps: number[] = [];
    for (let i = 0; i < runs; i++) {
      writes.length = 0;
      fsalWrites = 0;
      meter.statements = 0;
      meter.ms = 0;
      const cpu0 = process.cpuUsage();
      const t0 = performance.now();
      await sh(`dd if=/dev/zero of=${mnt}/dd-${i}.bin bs=1M count=${MB} 2>/dev/null`);
      const wall = performance.now() - t0;
      const cpu = process.cpuUsage(cpu0);
      mbps.push((MB * 1000) / wall);
      const sizes = new Map<number, number>();
      for (const w of writes) sizes.set(w, (sizes.get(w) ?? 0) + 1);
      process.stdout.write(
        `run ${i}: ${((MB * 1000) / wall).toFixed(1)} MB/s, ${(wall / MB).toFixed(2)} ms/MiB wall, process CPU ${((cpu.user + cpu.system) / 1000 / MB).toFixed(2)} ms/MiB (user ${(cpu.user / 1000 / MB).toFixed(2)}, sys ${(cpu.system / 1000 / MB).toFixed(2)}); kernel writes ${writes.length} (${[...sizes].map(([s, n]) => `${n}x${s}`).join(' ')}); FSAL Writes ${fsalWrites}; db statements ${meter.statements} (${meter.ms.toFixed(0)} ms summed)\n`,
      );
      await sh(`rm -f ${mnt}/dd-${i}.bin`);
    }
    if (profile) {
      const { profile: p } = await session.post('Profiler.stop');
      writeFileSync(profile, JSON.stringify(p));
    }
    process.stdout.write(`median ${median(mbps).toFixed(1)} MB/s, load ${os.loadavg().map((x) => x.toFixed(1)).join(' ')}\n`);
  } finally {
    await mounts.closeAll();
  }
} finally {
  await f.close();
  await rm(prefix, { recursive: true, force: true });
}
process.exit(0);
