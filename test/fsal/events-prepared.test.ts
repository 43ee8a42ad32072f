// An FSAL call's one database statement, its StorageEvent's INSERT, runs as a named prepared statement: the
// connection parses and plans it once, then every call only binds and executes it. Unprepared, parsing and planning
// that INSERT was most of its time (0.6–0.9 ms against 0.14–0.33 ms prepared; docs/BENCHMARKS.md, issue 21, "fsal").
// Checked on PostgreSQL itself: one pooled connection, whose pg_prepared_statements shows the statement and how
// many times it ran.
import { randomUUID } from 'node:crypto';
import test from 'ava';
import { insertExecution } from '../../src/agents/execution/repo.ts';
import { appendStorageEvent } from '../../src/fsal/events.ts';
import { FsalService } from '../../src/fsal/service.ts';
import { silentLogger } from '../../src/logging/logger.ts';
import { VolumeService } from '../../src/volumes/service.ts';
import { recordQueries } from '../support/query-recorder.ts';
import { agentManifest, onePgConnection, TENANT } from './support.ts';

test('each FSAL call runs its StorageEvent INSERT as one prepared statement, planned once per connection', async (t) => {
  const { db, dataDir } = await onePgConnection(t, 'orch-fsal-prepared-');
  const volumes = new VolumeService({ db, dataDir, nodeId: 'node-fsal', logger: silentLogger(), quotaChunkBytes: 8 * 1024 * 1024 });
  const exec = randomUUID();
  await insertExecution(db, {
    id: exec,
    tenantId: TENANT,
    agentId: randomUUID(),
    agentName: 'fsal-agent',
    agentVersion: '1.0.0',
    manifest: agentManifest(),
    input: 'x',
    ownerNode: 'node-fsal',
    leaseMs: 60_000,
  });
  await db.query(`UPDATE executions SET status = 'running' WHERE id = $1`, [exec]);
  const vol = (await volumes.create({ tenantId: TENANT, ownerSubject: 'user', label: 'prepared', sizeLimitBytes: 64 * 1024 * 1024, owner: { kind: 'execution', ref: exec } })).id;

  const rec = recordQueries(db);
  const fsal = new FsalService({ db: rec.db, volumes, logger: silentLogger() });
  t.teardown(() => fsal.close());
  const caller = { tenantId: TENANT };
  const ids = { execution_id: exec, volume_id: vol };
  // The first call decides the authorization (its queries are not the per-call cost: reused for accessCacheMs).
  await fsal.getAttr(caller, { ...ids, path: '' });
  rec.clear();

  const FILES = 20;
  for (let i = 0; i < FILES; i++) {
    await fsal.create(caller, { ...ids, path: `f${i}`, mode: 0, exclusive: true });
    await fsal.write(caller, { ...ids, path: `f${i}`, offset: 0, data: Buffer.alloc(1024, i) });
    await fsal.getAttr(caller, { ...ids, path: `f${i}` });
  }
  const calls = FILES * 3;
  const sent = rec.statements();
  const inserts = sent.filter((s) => s.sql.includes('INSERT INTO storage_events'));
  t.is(inserts.length, 1, 'one INSERT text for every call');
  t.is(inserts[0]!.calls, calls, 'sequential calls: one INSERT each');
  t.is(sent.reduce((n, s) => n + s.calls, 0), calls, 'and no other statement (the quota is reserved ahead in chunks)');

  // On the server: the connection holds the statement prepared, and ran that one preparation for every call.
  const prepared = await db.query<{ name: string; runs: number }>(
    'SELECT name, (generic_plans + custom_plans)::INT4 AS runs FROM pg_prepared_statements WHERE name = $1',
    ['orch_storage_events'],
  );
  t.is(prepared.rows.length, 1, 'the StorageEvent INSERT is a prepared statement on the connection');
  t.true(prepared.rows[0]!.runs >= calls, `ran ${prepared.rows[0]?.runs} times from one preparation`);

  // The fs.* tools' single event (recordStorageEvent) is prepared the same way.
  await db.tx((tx) => appendStorageEvent(tx, { volume_id: vol, tenant_id: TENANT, execution_id: exec, operation: 'write', path: '/tool', status: 'OK' }));
  const one = await db.query('SELECT name FROM pg_prepared_statements WHERE name = $1', ['orch_storage_event']);
  t.is(one.rows.length, 1);
});
