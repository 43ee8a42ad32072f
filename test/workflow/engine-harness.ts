// The workflow engine on real PostgreSQL for the engine, approval and route tests: a throwaway database with every
// migration, the real registry (WorkflowDefinitionService), an actor runtime, the in-process bus and the workflow
// capability as a node wires it.
import type { ExecutionContext } from 'ava';
import { randomBytes } from 'node:crypto';
import { ActorRuntime } from '../../src/actors/runtime.ts';
import { MemoryBus } from '../../src/bus/memory.ts';
import { silentLogger, type Logger } from '../../src/logging/logger.ts';
import type { Db } from '../../src/storage/db.ts';
import { migrate } from '../../src/storage/migrate.ts';
import { openPg } from '../../src/storage/pg.ts';
import { openMigratedPglite } from '../../src/storage/open.ts';
import { mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { defaultSystemSandbox, startWorkflowCapability, type WorkflowCapability } from '../../src/workflow/engine/capability.ts';
import type { SystemSandbox } from '../../src/workflow/states/system.ts';
import type { StateRunner } from '../../src/workflow/engine/runner-types.ts';
import type { EngineDeps } from '../../src/workflow/engine/run.ts';
import type { WriterOptions } from '../../src/workflow/engine/writer.ts';
import type { WorkflowExecutionRow } from '../../src/workflow/engine/repo.ts';
import { getWorkflowExecution, insertWorkflowExecution } from '../../src/workflow/engine/repo.ts';
import { parseWorkflowManifest } from '../../src/workflow/manifest/parse.ts';
import type { StateKind, WorkflowManifest } from '../../src/workflow/manifest/types.ts';
import { WorkflowDefinitionService } from '../../src/workflow/registry/service.ts';
import { createTestDatabase } from '../support/pg.ts';
import { pgWire, type PgWire } from '../support/pg-wire.ts';

export const TENANT = 'acme';

export interface EngineHarness {
  /** The database URL (a second harness can share it, as a second node). */
  url?: string;
  db: Db;
  bus: MemoryBus;
  actors: ActorRuntime;
  defs: WorkflowDefinitionService;
  cap: WorkflowCapability;
  deploy(yaml: string): Promise<string>;
  run(name: string, body?: { input?: unknown; intent?: string; blackboard?: Record<string, unknown> }): Promise<string>;
  /** Waits until the run is terminal (or `status` is reached); fails after `ms`. */
  waitFor(id: string, status?: string, ms?: number): Promise<WorkflowExecutionRow>;
  events(id: string): Promise<{ seq: number; type: string; state_name: string | null; iteration_number: number | null; payload: Record<string, unknown> }[]>;
}

export async function startEngine(
  t: ExecutionContext,
  o: {
    runners?: Partial<Record<StateKind, StateRunner<never>>>;
    db?: { url: string };
    nodeId?: string;
    leaseMs?: number;
    pglite?: boolean;
    storage?: EngineDeps['storage'];
    /** Wraps the engine's Db (e.g. a query recorder, test/support/query-recorder.ts). */
    wrapDb?: (db: Db) => Db;
    /** Opens the PostgreSQL Db instead of a plain openPg (e.g. with 40001 injected beneath it, faulty-db.ts). */
    openDb?: (url: string) => Promise<Db>;
    /** Where System states run (default: the capability's bubblewrap sandbox). */
    system?: SystemSandbox;
    /** spec.workflow.park_after_seconds in ms; with it the sweeper and parking start (pollMs 100: the scan's period). */
    parkAfterMs?: number;
    /** The step writer's options (src/workflow/engine/writer.ts WriterOptions). */
    writer?: WriterOptions;
    /** The engine's logger (default: a silent one). */
    logger?: Logger;
  } = {},
): Promise<EngineHarness> {
  let url = o.db?.url;
  if (!url && !o.pglite) {
    const tdb = await createTestDatabase({ migrated: true });
    t.teardown(() => tdb.drop());
    url = tdb.url;
  }
  const logger = o.logger ?? silentLogger();
  let db: Db;
  if (o.pglite) {
    const dir = await mkdtemp(path.join(os.tmpdir(), 'orch-wf-pglite-'));
    t.teardown(() => rm(dir, { recursive: true, force: true }));
    // From the schema template: the migrate() below finds nothing to do.
    db = await openMigratedPglite(path.join(dir, 'pglite'));
  } else {
    db = o.openDb ? await o.openDb(url!) : await openPg(url!, { logger });
  }
  if (o.wrapDb) db = o.wrapDb(db);
  await migrate(db, logger);
  const bus = new MemoryBus();
  const actors = new ActorRuntime(logger, `t-${randomBytes(4).toString('hex')}`);
  const defs = new WorkflowDefinitionService(db, logger);
  // System states run in the engine's default sandbox, made here rather than inside the capability so that teardown
  // ends its spawner helper. Left to unref itself when idle, a helper once stayed referenced under load with no
  // sandbox left, and held this file's ava worker for minutes after its last test (issue 15).
  const ownSystem = o.system ? undefined : defaultSystemSandbox(logger);
  const system: SystemSandbox = o.system ?? ownSystem!;
  const cap = startWorkflowCapability({ db, bus, actors, nodeId: o.nodeId ?? 'node-a', workflows: defs, logger, pollMs: 100, system, ...(o.leaseMs ? { leaseMs: o.leaseMs } : {}), ...(o.runners ? { runners: o.runners } : {}), ...(o.storage ? { storage: o.storage } : {}), ...(o.parkAfterMs !== undefined ? { parkAfterMs: o.parkAfterMs } : {}), ...(o.writer ? { writer: o.writer } : {}) });
  const stopSweeper = o.parkAfterMs !== undefined ? cap.startSweeper(200) : undefined;
  t.teardown(async () => {
    await stopSweeper?.();
    await actors.shutdown(2000);
    ownSystem?.close();
    await bus.close();
    await db.close();
  });
  const h: EngineHarness = {
    db,
    bus,
    actors,
    defs,
    cap,
    async deploy(yaml) {
      return (await defs.deploy({ tenant: TENANT, subject: 'alice', yaml, force: true })).workflow_id;
    },
    async run(name, body = {}) {
      return (await cap.runs.run({ tenant: TENANT, workflow: name, ...body })).execution_id;
    },
    async waitFor(id, status, ms = 60_000) {
      const deadline = Date.now() + ms;
      for (;;) {
        const row = await getWorkflowExecution(db, id);
        if (row && (status ? row.status === status : ['completed', 'failed', 'cancelled'].includes(row.status))) return row;
        if (Date.now() > deadline) throw new Error(`run ${id} is ${row?.status} at ${row?.current_state}, not ${status ?? 'terminal'} after ${ms} ms`);
        await new Promise((r) => setTimeout(r, 25));
      }
    },
    async events(id) {
      const res = await db.query<{ seq: number; type: string; state_name: string | null; iteration_number: number | null; payload: Record<string, unknown> }>(
        'SELECT seq, type, state_name, iteration_number, payload FROM workflow_events WHERE execution_id = $1 ORDER BY seq',
        [id],
      );
      return res.rows;
    },
  };
  return Object.assign(h, { url });
}

/** A workflow manifest of `states` (YAML text of the states map, indented 4). */
export function manifest(name: string, initial: string, states: string, extra = ''): string {
  return `apiVersion: orch.dev/v1
kind: Workflow
metadata:
  name: ${name}
  version: 1.0.0
${extra}spec:
  initial_state: ${initial}
  states:
${states}`;
}

/** A workflow `w` of one System state: what the writer tests (steps, starts) write rows of, without running it. */
export const ONE_STATE_WORKFLOW = manifest('w', 'a', "    a: { kind: System, command: 'true', transitions: [] }\n");

/** A throwaway PostgreSQL database with every migration and no engine: for the tests of the engine's writers. */
export async function migratedPg(t: ExecutionContext): Promise<Db> {
  const tdb = await createTestDatabase({ migrated: true });
  t.teardown(() => tdb.drop());
  const db = await openPg(tdb.url, { logger: silentLogger() });
  t.teardown(() => db.close());
  await migrate(db, silentLogger());
  return db;
}

/**
 * A migrated throwaway database reached through a relay that counts what the client sends (test/support/pg-wire.ts):
 * for the writers' tests of how many bytes a statement puts on the wire.
 */
export async function wiredPg(t: ExecutionContext): Promise<{ db: Db; wire: PgWire }> {
  const database = await createTestDatabase();
  const wire = await pgWire(database.url);
  t.teardown(async () => {
    await wire.close();
    await database.drop();
  });
  const db = await openPg(wire.url, { logger: silentLogger(), plans: false });
  t.teardown(() => db.close());
  await migrate(db, silentLogger());
  return { db, wire };
}

/** `yaml` parsed; a test manifest that does not parse is a mistake of the test, thrown. */
export function parsedManifest(yaml: string): WorkflowManifest {
  const parsed = parseWorkflowManifest(yaml);
  if (!parsed.ok) throw new Error(JSON.stringify(parsed.errors));
  return parsed.manifest;
}

/** Inserts runs of `yaml` (tenant 't', owned by 'node-a') straight into the table, as the step writer's tests need them. */
export async function insertRuns(db: Db, ids: string[], yaml: string = ONE_STATE_WORKFLOW): Promise<void> {
  const manifest = parsedManifest(yaml);
  for (const id of ids) {
    await insertWorkflowExecution(
      db,
      { id, tenantId: 't', workflowId: 'w', workflowName: 'w', workflowVersion: '1.0.0', manifest, input: {}, blackboard: {}, context: {}, depth: 0, ancestry: [], ownerNode: 'node-a', leaseMs: 30_000 },
      [{ type: 'WorkflowExecutionStarted', key: 'started', payload: {} }],
    );
  }
}
