// Controller failover (issue 7): two real `orch up --role controller` processes on one PostgreSQL database. Each
// round starts a fresh controller A beside the long-lived controller B, starts workflow runs on A, waits until they
// are running, SIGKILLs A, and measures for every run the time from the kill until B has taken it over (its claim:
// owner_node = B with a new epoch) and until B has recorded its next state (a WorkflowStateCompleted row written after
// the claim). Failover time is the second, from the database's recorded_at of that state: the time the workflow
// stood still. It is bounded by the workflow lease (`spec.cluster.workflow_lease_seconds`) plus B's sweep interval (a
// sixth of the lease) plus the interrupted state's re-run. A lease equal to the
// built-in default (WORKFLOW_LEASE_MS) is left out of the controllers' configuration, so that run measures the
// default configuration itself.
import { randomBytes } from 'node:crypto';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { silentLogger } from '../src/logging/logger.ts';
import { openDb } from '../src/storage/open.ts';
import { createTestDatabase } from '../test/support/pg.ts';
import { makeTestIdp } from '../test/support/jwks.ts';
import { eventually, startOrchNode, type NodeProcess } from '../test/support/node-process.ts';
import { api, controllerConfig } from '../test/cluster/support.ts';
import { WORKFLOW_LEASE_MS } from '../src/workflow/engine/capability.ts';

export interface FailoverFigures {
  leaseSeconds: number;
  /** One sample per interrupted run: ms from SIGKILL to B's claim. */
  claimMs: number[];
  /** One sample per interrupted run: ms from SIGKILL to the first state B completed for it. */
  resumeMs: number[];
}

/** 30 states of `sleep 0.4`: long enough to be running well past any failover measured here. */
function slowWorkflow(): string {
  const states: string[] = [];
  for (let i = 1; i <= 30; i++) {
    const next = i < 30 ? `[{ condition: on_success, target: s${i + 1} }]` : '[]';
    states.push(`    s${i}:\n      kind: System\n      command: 'sleep 0.4; echo ${i}'\n      transitions: ${next}\n`);
  }
  return `apiVersion: orch.dev/v1\nkind: Workflow\nmetadata: { name: plod, version: 1.0.0 }\nspec:\n  initial_state: s1\n  states:\n${states.join('')}`;
}

export async function benchControllerFailover(kills: number, leaseSeconds: number, runsPerKill: number, out: (line: string) => void): Promise<FailoverFigures> {
  const database = await createTestDatabase();
  const dir = await mkdtemp(path.join(os.tmpdir(), 'orch-bench-failover-'));
  const idp = await makeTestIdp();
  const token = await idp.sign({ sub: 'bench', tenant_id: 'bench', realm_access: { roles: ['tenant-admin'] } });
  const db = await openDb({ url: database.url, dataDir: dir }, silentLogger());
  const started: NodeProcess[] = [];
  const suffix = randomBytes(3).toString('hex');
  const start = async (name: string): Promise<NodeProcess> => {
    const file = path.join(dir, `${name}.yaml`);
    let yaml = controllerConfig({ nodeId: name, jwksFile: idp.jwksFile, issuer: idp.issuer, audience: idp.audience, leaseSeconds });
    if (leaseSeconds * 1000 === WORKFLOW_LEASE_MS) {
      yaml = yaml.replace(`, workflow_lease_seconds: ${leaseSeconds}`, '');
      if (yaml.includes('workflow_lease_seconds')) throw new Error('could not leave the lease out of the configuration');
    }
    await writeFile(file, yaml);
    const node = await startOrchNode({ ORCH_CONFIG: file, ORCH_DATA_DIR: path.join(dir, name), DATABASE_URL: database.url, REDIS_URL: undefined, ORCH_LOG_LEVEL: 'warn' });
    started.push(node);
    return node;
  };
  const figures: FailoverFigures = { leaseSeconds, claimMs: [], resumeMs: [] };
  try {
    out(`  lease ${leaseSeconds} s${leaseSeconds * 1000 === WORKFLOW_LEASE_MS ? ' = the built-in default (no workflow_lease_seconds in the configuration)' : ' (spec.cluster.workflow_lease_seconds)'}`);
    const survivor = await start(`ctl-b-${suffix}`);
    const B = { http: survivor.banner.http, token };
    const deployed = await api(B, 'POST', '/v1/workflows', slowWorkflow(), 'application/yaml');
    if (deployed.status !== 201) throw new Error(`deploy: ${deployed.status} ${JSON.stringify(deployed.body)}`);
    for (let k = 0; k < kills; k++) {
      const victim = await start(`ctl-a${k}-${suffix}`);
      const A = { http: victim.banner.http, token };
      const ids: string[] = [];
      for (let i = 0; i < runsPerKill; i++) {
        const r = await api<{ execution_id: string }>(A, 'POST', '/v1/workflows/plod/run', {});
        if (r.status !== 201) throw new Error(`run: ${r.status} ${JSON.stringify(r.body)}`);
        ids.push(r.body.execution_id);
      }
      await eventually(async () => {
        const res = await db.query<{ n: number }>(
          `SELECT count(*)::INT4 AS n FROM workflow_executions WHERE id = ANY($1::UUID[]) AND status = 'running' AND current_state IN ('s2', 's3', 's4')`,
          [ids],
        );
        return res.rows[0]!.n === ids.length ? true : undefined;
      }, 30_000, 'runs on A to reach s2');
      // Whatever A has written so far stays; what is completed after the kill is B's.
      const before = await db.query<{ id: string; n: number }>(
        `SELECT execution_id::TEXT AS id, count(*)::INT4 AS n FROM workflow_events WHERE execution_id = ANY($1::UUID[]) AND type = 'WorkflowStateCompleted' GROUP BY execution_id`,
        [ids],
      );
      const killedAt = performance.now();
      const killedWall = new Date();
      await victim.kill('SIGKILL');
      const countAtKill = new Map(before.rows.map((r) => [r.id, r.n]));
      const claimed = new Map<string, number>();
      const resumed = new Map<string, number>();
      const deadline = Date.now() + (leaseSeconds * 4 + 30) * 1000;
      while (resumed.size < ids.length && Date.now() < deadline) {
        const rows = await db.query<{ id: string; owner_node: string | null; completed: number }>(
          `SELECT w.id::TEXT AS id, w.owner_node,
             (SELECT count(*)::INT4 FROM workflow_events e WHERE e.execution_id = w.id AND e.type = 'WorkflowStateCompleted') AS completed
           FROM workflow_executions w WHERE w.id = ANY($1::UUID[])`,
          [ids],
        );
        const now = performance.now() - killedAt;
        for (const r of rows.rows) {
          if (r.owner_node === `ctl-b-${suffix}` && !claimed.has(r.id)) claimed.set(r.id, now);
          // A state completed after the kill can only be B's: A is dead and fenced off.
          if (claimed.has(r.id) && r.completed > (countAtKill.get(r.id) ?? 0) && !resumed.has(r.id)) resumed.set(r.id, now);
        }
        await new Promise((r) => setTimeout(r, 25));
      }
      if (resumed.size < ids.length) throw new Error(`round ${k}: only ${resumed.size}/${ids.length} runs resumed on B`);
      // The resume time is taken from what the database recorded: the first state completed after the kill (A is
      // dead then, so it is B's), minus the moment of the kill (same machine, same clock). The polled time above
      // only confirms it happened.
      const first = await db.query<{ id: string; at: Date }>(
        `SELECT execution_id::TEXT AS id, min(recorded_at) AS at FROM workflow_events
         WHERE execution_id = ANY($1::UUID[]) AND type = 'WorkflowStateCompleted' AND recorded_at > $2 GROUP BY execution_id`,
        [ids, killedWall],
      );
      for (const r of first.rows) resumed.set(r.id, r.at.getTime() - killedWall.getTime());
      figures.claimMs.push(...claimed.values());
      figures.resumeMs.push(...resumed.values());
      out(`  kill ${k + 1}: claimed after ${[...claimed.values()].map((x) => Math.round(x)).join(', ')} ms; resumed (recorded) after ${[...resumed.values()].map((x) => Math.round(x)).join(', ')} ms`);
      for (const id of ids) await api(B, 'POST', `/v1/workflows/executions/${id}/cancel`);
    }
  } finally {
    for (const n of started) n.child.kill('SIGKILL');
    await db.close();
    await database.drop().catch(() => undefined);
    await rm(dir, { recursive: true, force: true });
  }
  return figures;
}
