// FSAL calls a workload makes through a FUSE mount, counted from its StorageEvents by operation and status: what each
// kernel operation costs in round trips (docs/FSAL.md "Speed"). The default workload is the fsal bench's shell loop
// of 1 KiB files (N files, calls per file); CMD runs any shell command in a directory of the mount instead (N=1).
// Timings are wall time with the FUSE callbacks in this process; read them beside `uptime`.
// Run: `tsx bench/fuse-calls.ts`, or `N=1 CMD='git clone -q file:///some/repo c' tsx bench/fuse-calls.ts`.
import { execFile } from 'node:child_process';
import { mkdtemp } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { MountManager } from '../src/fuse/mounts.ts';
import { silentLogger } from '../src/logging/logger.ts';
import { promisify } from 'node:util';
import { fsalFixture, TENANT } from '../test/fsal/support.ts';

/** Child processes, never a sync exec: the FUSE callbacks run on this process's event loop. */
const run = promisify(execFile);
const f = await fsalFixture();
const exec = await f.execution();
const vol = await f.volume({ limit: 1 << 30 });
await f.grant(exec, vol);
const prefix = await mkdtemp(path.join(os.tmpdir(), 'orch-fuse-count-'));
const token = await f.idp.sign({ sub: 'svc-bench', preferred_username: 'service-account-bench' });
const mounts = new MountManager({ mountPrefix: prefix, fsal: { address: f.address, token }, logger: silentLogger() });
const mnt = await mounts.mount({ execution_id: exec, volume_id: vol, tenant_id: TENANT });
await run('sh', ['-c', `mkdir ${mnt}/s`]);
await f.fsal.flushEvents();
const before = await f.db.query<{ n: string }>('SELECT max(seq) AS n FROM storage_events WHERE volume_id = $1', [vol]);
const N = Number(process.env.N ?? 50);
const t0 = performance.now();
await run('sh', ['-c', process.env.CMD ? `cd ${mnt}/s && ${process.env.CMD}` : `cd ${mnt}/s && i=0; while [ $i -lt ${N} ]; do head -c 1024 /dev/zero > f$i; i=$((i+1)); done`]);
const ms = performance.now() - t0;
await f.fsal.flushEvents();
const r = await f.db.query<{ operation: string; status: string; n: string }>('SELECT operation, status, count(*) AS n FROM storage_events WHERE volume_id = $1 AND seq > $2 GROUP BY 1, 2 ORDER BY 1', [vol, Number(before.rows[0]!.n)]);
process.stdout.write(`${(ms / N).toFixed(1)} ms per file; FSAL calls per file: ${r.rows.map((x) => `${x.operation} ${x.status} ${(Number(x.n) / N).toFixed(2)}`).join(', ')}\n`);
await mounts.closeAll();
await f.close();
process.exit(0);
