// `npm run chaos [-- --seed N --duration S --topology split|hybrid --rate R --settle S --fault-every A,B --keep]`
//
// The chaos suite (issue 20): a real cluster — 2 controllers + 2 workers (`split`, the default) or 2 hybrids — on its
// own PostgreSQL and Redis (private servers on random ports; the shared 5432/6379 are never touched), loaded through
// the public API (direct runs, signed webhooks and /v1/stimuli with idempotency keys) while faults are injected on a
// seeded schedule: a node SIGKILLed (and started again a few seconds later) or frozen with SIGSTOP (and thawed) every
// A–B seconds, PostgreSQL killed once and Redis killed once (each back after 5 s). Then everything is healed, the runs
// are given `--settle` seconds to end, and the history is checked (check.ts). Bounded: load for `--duration` seconds,
// settle at most `--settle`. The seed fixes the schedule of faults, their targets and the mix of the load (timing on
// a loaded machine still varies). The LAST line is the summary; the exit code is 1 when a run was lost or stuck, a
// key started two runs, or an event history has a gap or a duplicate.
import { randomBytes } from 'node:crypto';
import { mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { silentLogger } from '../../src/logging/logger.ts';
import { openDb } from '../../src/storage/open.ts';
import type { Db } from '../../src/storage/db.ts';
import { makeTestIdp } from '../../test/support/jwks.ts';
import { startPrivatePostgres, startPrivateRedis } from '../../test/support/private-services.ts';
import { startScriptedLlm } from '../../test/support/scripted-llm.ts';
import { conversation, llmProviders } from '../../test/cluster/processes.ts';
import { ChaosCluster, isFrontDoor, type ChaosNode, type Topology } from './cluster.ts';
import { LoadDriver, STIMULUS_SOURCE, WEBHOOK_SOURCE, WORKFLOW } from './load.ts';
import { judge } from './check.ts';
import { seeded } from '../../test/support/seeded.ts';

function arg(name: string): string | undefined {
  const i = process.argv.indexOf(`--${name}`);
  return i >= 0 ? process.argv[i + 1] : undefined;
}
function num(name: string, fallback: number): number {
  const v = Number(arg(name));
  return Number.isFinite(v) && v > 0 ? v : fallback;
}


const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

const seed = num('seed', Math.floor(Math.random() * 1_000_000));
const duration = num('duration', 120);
const settle = num('settle', 180);
const rate = num('rate', 1);
const topology: Topology = arg('topology') === 'hybrid' ? 'hybrid' : 'split';
const [faultMin, faultMax] = (arg('fault-every') ?? '10,20').split(',').map(Number) as [number, number];
const keep = process.argv.includes('--keep');
const rnd = seeded(seed); // a seed replays the same schedule
const pick = (n: number): number => Math.floor(rnd() * n);
const between = (a: number, b: number): number => a + rnd() * (b - a);
const t0 = Date.now();
const say = (line: string): void => void process.stdout.write(`[${((Date.now() - t0) / 1000).toFixed(1).padStart(6)} s] ${line}\n`);

const AGENT = `apiVersion: orch.dev/v1
kind: Agent
metadata: { name: chaos-answerer, version: 1.0.0 }
spec:
  runtime: { language: node, version: "20", isolation: process, model: default }
  task: { instruction: Answer in one word. }
  execution: { mode: one-shot, max_iterations: 1, llm_timeout_seconds: 120, iteration_timeout: 300, validation: [] }
  security: { resources: { timeout: 600 } }
`;

function workflow(effects: string): string {
  return `apiVersion: orch.dev/v1
kind: Workflow
metadata: { name: ${WORKFLOW}, version: 1.0.0 }
spec:
  initial_state: effect
  states:
    effect:
      kind: System
      command: 'echo "{{input.n}}:effect" >> ${effects}; sleep 0.5'
      transitions: [ { condition: on_success, target: ask } ]
    ask:
      kind: Agent
      agent: chaos-answerer
      input: 'n={{input.n}}'
      transitions: [ { target: note } ]
    note:
      kind: System
      command: 'update_blackboard {"done": true}'
      transitions: []
`;
}

async function main(): Promise<number> {
  say(`chaos: seed ${seed}, topology ${topology}, load ${duration} s at ${rate} runs/s, a node fault every ${faultMin}-${faultMax} s, settle <= ${settle} s`);
  const dir = await mkdtemp(path.join(os.tmpdir(), 'orch-chaos-'));
  const cleanups: (() => Promise<unknown>)[] = [];
  let cluster: ChaosCluster | undefined;
  try {
    const pg = await startPrivatePostgres();
    cleanups.push(() => pg.cleanup());
    const redis = await startPrivateRedis();
    cleanups.push(() => redis.cleanup());
    const databaseUrl = await pg.createDatabase();
    say(`private PostgreSQL :${pg.port}, Redis :${redis.port}; files in ${dir}`);
    let db: Db = await openDb({ url: databaseUrl, dataDir: dir }, silentLogger());
    cleanups.push(() => db.close());

    // The model: answers after a short delay; counts the calls per run (the input carries n=<n>).
    const modelCalls = new Map<string, number>();
    const llm = await startScriptedLlm(async (body) => {
      const m = /n=([\w-]+)/.exec(conversation(body));
      if (m?.[1]) modelCalls.set(m[1], (modelCalls.get(m[1]) ?? 0) + 1);
      await sleep(100 + Math.random() * 500);
      return { content: 'done' };
    });
    cleanups.push(() => llm.close());
    const idp = await makeTestIdp();
    // Webhooks are ingested in the system tenant: everything runs there, so one token sees it all.
    const token = await idp.sign({ sub: 'chaos', tenant_id: 'orch-system', realm_access: { roles: ['tenant-admin'] } }, { ttlSeconds: 6 * 3600 });
    const webhookSecret = randomBytes(16).toString('hex');
    const route = (source: string): string => `      - { source: ${source}, workflow: ${WORKFLOW}, input_template: '{"n": "{{content.n}}"}' }\n`;
    const specTail =
      `  auth: { issuer: ${idp.issuer}, audience: ${idp.audience}, jwks_file: ${idp.jwksFile} }\n` +
      llmProviders(llm.url) +
      `  stimuli:\n    routes:\n${route(WEBHOOK_SOURCE)}${route(STIMULUS_SOURCE)}`;
    const suffix = randomBytes(2).toString('hex');
    cluster = new ChaosCluster({ dir, databaseUrl, redisUrl: redis.url, specTail, env: { ORCH_WEBHOOK_SECRET_CHAOS: webhookSecret } });
    const c = cluster;
    await c.startAll(await ChaosCluster.plan(topology, suffix));
    const ids = c.nodes.map((n) => n.spec.id);
    for (const deadline = Date.now() + 120_000; ; ) {
      const res = await db.query<{ n: number }>(`SELECT count(*)::INT4 AS n FROM cluster_nodes WHERE node_id = ANY($1) AND status = 'ACTIVE'`, [ids]);
      if (res.rows[0]!.n === ids.length) break;
      if (Date.now() > deadline) throw new Error('the cluster did not come up ACTIVE in 120 s');
      await sleep(500);
    }
    say(`cluster up: ${c.nodes.map((n) => `${n.spec.id} (${n.spec.role})`).join(', ')}`);
    const front = c.frontDoor(pick)!;
    const api = async (url: string, body: string, type: string): Promise<void> => {
      const res = await fetch(`http://127.0.0.1:${front.spec.http}${url}`, { method: 'POST', headers: { authorization: `Bearer ${token}`, 'content-type': type }, body });
      if (res.status !== 201) throw new Error(`POST ${url}: ${res.status} ${await res.text()}`);
    };
    await api('/v1/agents', JSON.stringify({ manifest_yaml: AGENT }), 'application/json');
    const effects = path.join(dir, 'effects.log');
    await api('/v1/workflows', workflow(effects), 'application/yaml');

    const driver = new LoadDriver(c, { token, webhookSecret, pick, runId: `r${seed}` });
    const faults: string[] = [];
    const background = new Set<Promise<unknown>>();
    const later = (p: Promise<unknown>): void => {
      const q = p.catch((err: unknown) => say(`background step failed: ${(err as Error).message}`)).finally(() => background.delete(q));
      background.add(q);
    };
    const end = Date.now() + duration * 1000;
    const pgAt = Date.now() + between(0.25, 0.45) * duration * 1000;
    const redisAt = Date.now() + between(0.55, 0.75) * duration * 1000;
    let pgDone = false;
    let redisDone = false;
    let nextFault = Date.now() + between(faultMin, faultMax) * 1000;
    let nextFire = Date.now();
    const restartLater = (n: ChaosNode, afterMs: number): void =>
      later(
        (async () => {
          await sleep(afterMs);
          for (let attempt = 1; n.state === 'down'; attempt++) {
            try {
              await c.start(n);
              say(`  ${n.spec.id} started again`);
            } catch (err) {
              say(`  ${n.spec.id} did not start (attempt ${attempt}): ${(err as Error).message.split('\n')[0]}`);
              await sleep(3000);
            }
          }
        })(),
      );
    while (Date.now() < end) {
      const now = Date.now();
      if (now >= nextFire) {
        driver.fire();
        nextFire += 1000 / rate;
      }
      if (!pgDone && now >= pgAt) {
        pgDone = true;
        faults.push('postgres kill');
        say('fault: PostgreSQL SIGKILL (back in 5 s)');
        later((async () => {
          await pg.kill();
          await sleep(5000);
          await pg.start();
          say('  PostgreSQL is back');
        })());
      } else if (!redisDone && now >= redisAt) {
        redisDone = true;
        faults.push('redis kill');
        say('fault: Redis SIGKILL (back in 5 s)');
        later((async () => {
          await redis.kill();
          await sleep(5000);
          await redis.start();
          say('  Redis is back');
        })());
      } else if (now >= nextFault) {
        nextFault = now + between(faultMin, faultMax) * 1000;
        // Any node that is up, but never the last front door standing: the load needs one to go in.
        const up = c.nodes.filter((n) => n.state === 'up');
        const doors = up.filter(isFrontDoor);
        const candidates = up.filter((n) => !isFrontDoor(n) || doors.length > 1);
        const victim = candidates[pick(Math.max(1, candidates.length))];
        const freeze = rnd() < 0.5;
        if (victim && freeze) {
          const ms = Math.round(between(4000, 10_000));
          faults.push(`SIGSTOP ${victim.spec.role}`);
          say(`fault: SIGSTOP ${victim.spec.id} for ${ms} ms`);
          c.freeze(victim);
          later((async () => {
            await sleep(ms);
            if (victim.state === 'frozen') c.thaw(victim);
            say(`  ${victim.spec.id} thawed`);
          })());
        } else if (victim) {
          faults.push(`SIGKILL ${victim.spec.role}`);
          say(`fault: SIGKILL ${victim.spec.id}`);
          await c.kill(victim);
          restartLater(victim, Math.round(between(2000, 5000)));
        }
      }
      await sleep(Math.max(5, Math.min(nextFire, nextFault) - Date.now()));
    }
    say(`load over: ${driver.deliveries.length} deliveries; waiting for the last answers and the faults to heal`);
    await driver.drain();
    await Promise.all([...background]);
    if (!pg.isRunning()) await pg.start();
    if (!redis.isRunning()) await redis.start();
    await c.healAll();
    // The test's own connection pool may hold connections the PostgreSQL kill broke: a fresh one for the checks.
    await db.close().catch(() => undefined);
    db = await openDb({ url: databaseUrl, dataDir: dir }, silentLogger());
    say(`settling: waiting (at most ${settle} s) for every run to end`);
    const settleEnd = Date.now() + settle * 1000;
    for (;;) {
      const res = await db
        .query<{ n: number }>(`SELECT count(*)::INT4 AS n FROM workflow_executions WHERE workflow_name = $1 AND status IN ('running', 'waiting_for_human_input')`, [WORKFLOW])
        .catch(() => ({ rows: [{ n: -1 }] }));
      if (res.rows[0]!.n === 0 || Date.now() > settleEnd) break;
      await sleep(1000);
    }
    const v = await judge(db, driver.deliveries, effects, modelCalls);
    const undecided = driver.deliveries.filter((d) => !d.definite);
    say(`runs ${v.runs} (completed ${v.completed}, failed ${v.failedRuns}); deliveries ${v.deliveries}: ${v.definite} answered, ${v.undecided} never answered`);
    for (const d of undecided.slice(0, 5)) say(`  never answered: ${d.channel} ${d.key ?? d.n} after ${d.attempts} attempt(s): ${d.lastError ?? ''}`);
    for (const [reason, n] of Object.entries(v.failedAgentStates)) say(`  Agent state failed x${n}: ${reason}`);
    for (const what of [...v.lost, ...v.stuck, ...v.duplicatedRuns, ...v.historyProblems].slice(0, 20)) say(`  PROBLEM ${what}`);
    // What the cluster recorded for the deliveries behind a problem, and what the driver was answered.
    for (const d of driver.deliveries.filter((x) => v.lost.some((l) => l.includes(x.key ?? x.n)) || v.duplicatedRuns.some((l) => l.includes(x.key ?? x.n)))) {
      say(`  ${d.channel} ${d.key ?? d.n} answers: ${d.answers.join(' | ')}`);
      if (d.key) {
        const rows = await db.query<{ status: string; error: string | null; workflow_execution_id: string | null; created_at: Date }>(
          'SELECT status, error, workflow_execution_id::TEXT AS workflow_execution_id, created_at FROM stimuli WHERE idempotency_key = $1',
          [d.key],
        );
        for (const r of rows.rows) say(`    stimulus ${r.status} run ${r.workflow_execution_id ?? '-'} at ${r.created_at.toISOString()}: ${r.error ?? ''}`);
      }
    }
    const q = (p: number): number => Math.round(v.longestStallMs[Math.min(v.longestStallMs.length - 1, Math.floor((p / 100) * v.longestStallMs.length))] ?? 0);
    say(`longest stall per run (between two recorded events, the Agent state's own time included): p50 ${q(50)} ms, p90 ${q(90)} ms, p99 ${q(99)} ms, max ${q(100)} ms`);
    say(`faults: ${faults.join(', ')}`);
    await c.stopAll();
    const bad = v.lost.length + v.stuck.length + v.duplicatedRuns.length + v.historyProblems.length;
    if (keep || bad > 0) say(`node logs kept in ${dir}`);
    else cleanups.push(() => rm(dir, { recursive: true, force: true }));
    for (const fn of cleanups.reverse()) await fn().catch(() => undefined);
    process.stdout.write(
      `chaos summary: seed=${seed} topology=${topology} duration=${duration}s runs=${v.runs} faults=${faults.length} lost=${v.lost.length} stuck=${v.stuck.length} ` +
        `duplicated_runs=${v.duplicatedRuns.length} history_problems=${v.historyProblems.length} duplicated_effects=${v.duplicatedEffects} repeated_model_calls=${v.repeatedModelCalls} ` +
        `failed_agent_states=${Object.values(v.failedAgentStates).reduce((a, b) => a + b, 0)} ${bad === 0 ? 'OK' : 'FAILED'}\n`,
    );
    return bad === 0 ? 0 : 1;
  } catch (err) {
    await cluster?.stopAll().catch(() => undefined);
    for (const fn of cleanups.reverse()) await fn().catch(() => undefined);
    process.stdout.write(`chaos summary: seed=${seed} topology=${topology} error=${JSON.stringify((err as Error).message.split('\n')[0])} FAILED\n`);
    process.stderr.write(`${(err as Error).stack ?? err}\nfiles in ${dir}\n`);
    return 2;
  }
}

process.exitCode = await main();
