// Quota reserved ahead (quotaChunkBytes) and given back: releaseReservations() returns only once every byte is back
// in used_bytes, also when the idle timer's release is in flight at that moment (the database slow to answer). The
// 16-writer test of service.test.ts read used_bytes above the bytes on disk once at load ~38: the timer's release
// had left the pool map before its UPDATE committed, so releaseReservations() had nothing to wait for.
import test from 'ava';
import { silentLogger } from '../../src/logging/logger.ts';
import type { Db } from '../../src/storage/db.ts';
import { VolumeService } from '../../src/volumes/service.ts';
import { volumeFixture } from './support.ts';

/** `db` whose give-back UPDATEs (negative adjustBytes) take `delayMs` longer, as on a loaded database. */
function slowGiveBack(db: Db, delayMs: number, seen: { n: number }): Db {
  return {
    kind: db.kind,
    tx: db.tx.bind(db),
    ping: db.ping.bind(db),
    close: db.close.bind(db),
    query: (async (text: string, params?: unknown[]) => {
      if (/SET used_bytes = GREATEST\(used_bytes \+ \$3, 0\)/.test(text) && typeof params?.[2] === 'number' && params[2] < 0) {
        seen.n += 1;
        await new Promise((r) => setTimeout(r, delayMs));
      }
      return db.query(text, params);
    }) as Db['query'],
  };
}

test('releaseReservations() waits for an idle release in flight: used_bytes equals the bytes written', async (t) => {
  const fx = await volumeFixture();
  t.teardown(() => fx.close());
  const seen = { n: 0 };
  const svc = new VolumeService({ db: slowGiveBack(fx.db, 600, seen), dataDir: fx.dataDir, nodeId: 'node-v1', logger: silentLogger(), quotaChunkBytes: 64 * 1024, quotaIdleMs: 50 });
  const v = await fx.volumes.create({ tenantId: 'acme', ownerSubject: 'alice', label: 'pool', sizeLimitBytes: 10_000_000 });
  await svc.writeFile('acme', v.id, '/a.bin', Buffer.alloc(1000, 1));
  const ahead = Number((await fx.db.query<{ used_bytes: string }>('SELECT used_bytes FROM volumes WHERE id = $1', [v.id])).rows[0]!.used_bytes);
  t.true(ahead > 1000, `reserved ahead: ${ahead}`);
  // The idle timer (50 ms) starts giving the rest back; its UPDATE takes 600 ms.
  while (seen.n === 0) await new Promise((r) => setTimeout(r, 10));
  await svc.releaseReservations();
  const used = Number((await fx.db.query<{ used_bytes: string }>('SELECT used_bytes FROM volumes WHERE id = $1', [v.id])).rows[0]!.used_bytes);
  t.is(used, 1000, 'every byte reserved ahead is back when releaseReservations() returns');
  t.is((await svc.get('acme', v.id)).used_bytes, 1000);
});
