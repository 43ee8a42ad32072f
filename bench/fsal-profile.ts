// Where an FSAL call's time goes: for each operation, the median wall time through gRPC (bearer auth, the real
// runtime server), the same call in-process (FsalService directly: no gRPC, no token check), and the database's part
// (statements per call and their summed time, measured by wrapping the Db the service uses). The rest of an
// in-process call is the filesystem and JavaScript. In-process figures are labelled as such.
// Run: `tsx bench/fsal-profile.ts [calls]` (default 200 per operation).
// The client's serializers are the FUSE daemon's (src/fsal/wire.ts: Write requests encoded in one buffer).
import { FSAL_DEFINITION as S } from '../src/fsal/wire.ts';
import type { Db, Queryable } from '../src/storage/db.ts';
import { fsalFixture, TENANT } from '../test/fsal/support.ts';
import { median } from './stats.ts';

interface DbMeter {
  statements: number;
  ms: number;
}

/** Wraps db.query and db.tx (in place) so every statement is counted and timed; a tx counts BEGIN/COMMIT as one. */
function meter(db: Db): DbMeter {
  const m: DbMeter = { statements: 0, ms: 0 };
  const q = db.query.bind(db);
  const tx = db.tx.bind(db);
  const timedQuery = (run: Queryable['query']): Queryable['query'] =>
    (async (sql: string, params?: readonly unknown[], options?: unknown) => {
      const t0 = performance.now();
      try {
        return await (run as (s: string, p?: readonly unknown[], o?: unknown) => Promise<never>)(sql, params, options);
      } finally {
        m.statements += 1;
        m.ms += performance.now() - t0;
      }
    }) as Queryable['query'];
  (db as { query: Queryable['query'] }).query = timedQuery(q);
  (db as { tx: Db['tx'] }).tx = (async (fn: (t: Queryable) => Promise<unknown>) => {
    const t0 = performance.now();
    const before = m.ms;
    try {
      return await tx((t) => fn({ query: timedQuery(t.query.bind(t)) }));
    } finally {
      // BEGIN + COMMIT round trips: the transaction's wall time minus its statements.
      m.statements += 2;
      m.ms = before + (performance.now() - t0);
    }
  }) as Db['tx'];
  return m;
}

async function main(): Promise<void> {
  const N = Number(process.argv[2] ?? 200);
  const f = await fsalFixture();
  const m = meter(f.db);
  try {
    const exec = await f.execution();
    const vol = await f.volume({ limit: 1024 * 1024 * 1024 });
    await f.grant(exec, vol);
    const ids = { execution_id: exec, volume_id: vol };
    const caller = { tenantId: TENANT };
    const mib = Buffer.alloc(1024 * 1024, 7);
    const small = Buffer.alloc(1024, 1);
    await f.fsal.create(caller, { ...ids, path: 'big.bin', mode: 0, exclusive: true });
    await f.fsal.mkDir(caller, { ...ids, path: 'small', mode: 0 });
    await f.fsal.create(caller, { ...ids, path: 'small/one', mode: 0, exclusive: true });
    let n = 0;
    type Op = { name: string; grpc: () => Promise<unknown>; direct: () => Promise<unknown> };
    const ops: Op[] = [
      { name: 'GetAttr', grpc: () => f.rpc(S.getAttr, { ...ids, path: 'big.bin' }), direct: () => f.fsal.getAttr(caller, { ...ids, path: 'big.bin' }) },
      {
        name: 'Write 1 MiB',
        grpc: () => f.rpc(S.write, { ...ids, path: 'big.bin', offset: (n++ % 64) * mib.length, data: mib }),
        direct: () => f.fsal.write(caller, { ...ids, path: 'big.bin', offset: (n++ % 64) * mib.length, data: mib }),
      },
      {
        name: 'Read 1 MiB',
        grpc: () => f.rpc(S.read, { ...ids, path: 'big.bin', offset: (n++ % 64) * mib.length, length: mib.length }),
        direct: () => f.fsal.read(caller, { ...ids, path: 'big.bin', offset: (n++ % 64) * mib.length, length: mib.length }),
      },
      { name: 'Create', grpc: () => f.rpc(S.create, { ...ids, path: `small/g${n++}`, mode: 0, exclusive: true }), direct: () => f.fsal.create(caller, { ...ids, path: `small/d${n++}`, mode: 0, exclusive: true }) },
      { name: 'Write 1 KiB', grpc: () => f.rpc(S.write, { ...ids, path: 'small/one', offset: 0, data: small }), direct: () => f.fsal.write(caller, { ...ids, path: 'small/one', offset: 0, data: small }) },
    ];
    const flush = (f.fsal as { flushEvents?: () => Promise<void> }).flushEvents?.bind(f.fsal);
    process.stdout.write(`calls per operation: ${N}; load ${(await import('node:os')).loadavg().map((x) => x.toFixed(1)).join(' ')}\n`);
    process.stdout.write('| operation | gRPC call, median ms | in-process call, median ms | DB statements per call | DB ms per call |\n|---|---|---|---|---|\n');
    for (const op of ops) {
      const g: number[] = [];
      const d: number[] = [];
      await op.grpc();
      for (let i = 0; i < N; i++) {
        const t0 = performance.now();
        await op.grpc();
        g.push(performance.now() - t0);
      }
      await flush?.();
      const s0 = m.statements;
      const ms0 = m.ms;
      for (let i = 0; i < N; i++) {
        const t0 = performance.now();
        await op.direct();
        d.push(performance.now() - t0);
      }
      await flush?.();
      process.stdout.write(
        `| ${op.name} | ${median(g).toFixed(2)} | ${median(d).toFixed(2)} | ${((m.statements - s0) / N).toFixed(1)} | ${((m.ms - ms0) / N).toFixed(2)} |\n`,
      );
    }
  } finally {
    await f.close();
  }
}

await main();
process.exit(0);
