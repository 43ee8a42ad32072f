// The surfaces the capacity bench loads, each through the node's public API, each with its operation, its latency
// bound (the same as its k6 script's threshold, bench/k6/) and its ladders of offered load.
import { fork, type ChildProcess } from 'node:child_process';
import { createHmac, randomUUID } from 'node:crypto';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { Redis } from 'ioredis';
import WebSocket from 'ws';
import { insertExecution } from '../../src/agents/execution/repo.ts';
import { attestationProof } from '../../src/agents/execution/sandbox.ts';
import { manifest as sealAgentManifest } from '../../test/seal/harness.ts';
import { redisUrl } from '../../test/support/redis.ts';
import { invokeBody, signEnvelopes, type SignedEnvelopes } from '../seal-envelopes.ts';
import { percentile } from '../stats.ts';
import { raceManifest } from '../workflow-race.ts';
import { openLoop, type StepResult } from './load.ts';
import { WEBHOOK_SECRET, type CapacityNode } from './node.ts';

export interface Driver {
  /** Before the step's meters start: what the load needs that is not the load (sockets joined, envelopes signed). */
  setup?(rate: number, seconds: number): Promise<void>;
  step(rate: number, seconds: number): Promise<StepResult>;
  close(): Promise<void>;
}

export interface Surface {
  key: string;
  title: string;
  /** What one operation is, for the report. */
  operation: string;
  /** Unit of the offered load and of the throughput axis. */
  unit: string;
  boundMs: number;
  rates: { quick: number[]; full: number[] };
  prepare(n: CapacityNode): Promise<Driver>;
}

export const HOOK_WORKFLOW = `apiVersion: orch.dev/v1
kind: Workflow
metadata: { name: on-hook, version: 1.0.0 }
spec:
  initial_state: note
  states:
    note:
      kind: System
      command: 'update_blackboard {"n": "{{input.n}}"}'
      transitions: []
`;

const TRIVIAL_AGENT = `apiVersion: orch.dev/v1
kind: Agent
metadata: { name: trivial, version: 1.0.0 }
spec:
  runtime: { language: node, version: "20", isolation: process, model: default }
  task: { instruction: Say ok. }
  execution: { mode: one-shot }
`;

export function bearer(n: CapacityNode): Record<string, string> {
  return { authorization: `Bearer ${n.token}` };
}

export async function deployWorkflow(n: CapacityNode, yaml: string): Promise<void> {
  const r = await n.request('POST', '/v1/workflows', JSON.stringify({ manifest_yaml: yaml, force: true }), bearer(n));
  if (r.status !== 201) throw new Error(`deploy answered ${r.status} ${r.body}`);
}

const agents = new WeakMap<CapacityNode, Promise<string>>();

/** The `trivial` agent's id on this node, deployed on first use (several surfaces share it). */
function trivialAgent(n: CapacityNode): Promise<string> {
  let p = agents.get(n);
  if (!p) {
    p = n.request('POST', '/v1/agents', JSON.stringify({ manifest_yaml: TRIVIAL_AGENT }), bearer(n)).then((r) => {
      if (r.status !== 200 && r.status !== 201) throw new Error(`agent deploy answered ${r.status} ${r.body}`);
      return (JSON.parse(r.body) as { agent_id: string }).agent_id;
    });
    agents.set(n, p);
  }
  return p;
}

function expect(status: number, want: number[], body: string, what: string): void {
  if (!want.includes(status)) throw new Error(`${what} answered ${status} ${body.slice(0, 200)}`);
}

/** An HTTP surface: one request (or two) per operation, open-loop. */
function httpDriver(fire: () => Promise<void>, maxInFlight = 512): Driver {
  return { step: (rate, seconds) => openLoop({ rate, seconds, fire, maxInFlight }), close: async () => undefined };
}

/** One run started, not waited for (POST /v1/workflows/on-hook/run → 201). */
export async function runOp(n: CapacityNode): Promise<() => Promise<void>> {
  await deployWorkflow(n, HOOK_WORKFLOW);
  const body = JSON.stringify({ input: { n: 1 } });
  return async () => {
    const r = await n.request('POST', '/v1/workflows/on-hook/run', body, bearer(n));
    expect(r.status, [201], r.body, 'run');
  };
}

/** One 10-step run, run-and-wait (bench/k6/workflow-run-wait.ts's request). */
export async function runAndWaitOp(n: CapacityNode): Promise<() => Promise<void>> {
  await deployWorkflow(n, raceManifest());
  const headers = { ...bearer(n), prefer: 'wait=30' };
  return async () => {
    const r = await n.request('POST', '/v1/workflows/race/run', '{}', headers);
    expect(r.status, [200], r.body, 'run-and-wait');
    if (!r.body.includes('"completed"')) throw new Error(`run-and-wait ended ${r.body.slice(0, 200)}`);
  };
}

/** One signed webhook (bench/k6/webhooks.ts's request: the same signature and idempotency key shape). */
export async function webhookOp(n: CapacityNode): Promise<() => Promise<void>> {
  await deployWorkflow(n, HOOK_WORKFLOW);
  const prefix = randomUUID();
  let i = 0;
  return async () => {
    const k = i++;
    const body = JSON.stringify({ n: k, event: 'capacity', at: Date.now() });
    const r = await n.request('POST', '/v1/webhooks/bench', body, {
      'x-orch-signature': `sha256=${createHmac('sha256', WEBHOOK_SECRET).update(body).digest('hex')}`,
      'x-idempotency-key': `${prefix}-${k}`,
    });
    expect(r.status, [200, 201, 202], r.body, 'webhook');
  };
}

/** One execution started and followed to its end (bench/k6/executions.ts's two requests); answers the start's ms. */
export async function executionOp(n: CapacityNode): Promise<() => Promise<number>> {
  const agentId = await trivialAgent(n);
  const body = JSON.stringify({ agent_id: agentId, input: 'go' });
  return async () => {
    const t0 = performance.now();
    const r = await n.request('POST', '/v1/executions', body, bearer(n));
    expect(r.status, [200, 201], r.body, 'execution start');
    const startMs = performance.now() - t0;
    const id = (JSON.parse(r.body) as { execution_id: string }).execution_id;
    const s = await n.request('GET', `/v1/executions/${id}/stream`, undefined, bearer(n));
    if (!s.body.includes('event: execution_completed')) throw new Error(`execution ${id} did not complete: ${s.body.slice(-300)}`);
    return startMs;
  };
}

/**
 * A SEAL session to load: a running execution of a deployed agent, held by another worker (its lease an hour long,
 * so nothing reclaims it), with the sandbox proof a process sandbox would hold — written as that worker's execution
 * loop would write it. Attestation (in `sign`) and every invoke then go through the node's HTTP API, with envelopes
 * signed beforehand as bench/k6/seal-invoke.ts sends them (bench/seal-envelopes.ts).
 */
export async function sealSession(n: CapacityNode): Promise<{ sign(count: number): Promise<SignedEnvelopes>; invoke(signed: SignedEnvelopes, i: number): Promise<void> }> {
  const agentId = await trivialAgent(n);
  const executionId = randomUUID();
  const tenant = (await n.db.query<{ tenant_id: string }>('SELECT tenant_id FROM agents WHERE id = $1', [agentId])).rows[0]?.tenant_id ?? 'orch-system';
  await insertExecution(n.db, { id: executionId, tenantId: tenant, agentId, agentName: 'trivial', agentVersion: '1.0.0', manifest: sealAgentManifest(['orch.tools.list']), input: 'x', ownerNode: 'capacity-seal-holder', leaseMs: 3_600_000 });
  const proof = attestationProof(`process-${executionId}`);
  await n.db.query(`UPDATE executions SET status = 'running', container_id = $2, attestation_secret_sha256 = $3 WHERE id = $1`, [executionId, `process-${executionId}`, proof.sha256]);
  return {
    sign: (count) => signEnvelopes(n.base, { agentId, executionId, containerId: proof.containerId }, count),
    async invoke(signed, i) {
      const e = signed.envelopes[i];
      if (!e) throw new Error('ran out of presigned envelopes');
      const r = await n.request('POST', '/v1/seal/invoke', invokeBody(signed.security_token, e));
      expect(r.status, [200], r.body, 'invoke');
      if (r.body.includes('"isError":true')) throw new Error(`invoke answered a tool error: ${r.body.slice(0, 200)}`);
    },
  };
}

export const runsStarted: Surface = {
  key: 'runs',
  title: 'Workflow runs started',
  operation: 'POST /v1/workflows/on-hook/run (no wait; 201 with the run id; the one-step run proceeds in the background)',
  unit: 'runs/s',
  boundMs: 250,
  rates: { quick: [20, 60], full: [10, 25, 50, 100, 200, 400, 800] },
  prepare: async (n) => httpDriver(await runOp(n)),
};

export const steps: Surface = {
  key: 'steps',
  title: 'Workflow steps (10-step runs, run-and-wait)',
  operation: 'POST /v1/workflows/race/run with Prefer: wait=30, answered 200 completed at the run\'s end; 10 System steps per run (the load is counted in steps/s)',
  unit: 'steps/s',
  boundMs: 1000,
  rates: { quick: [50, 150], full: [20, 50, 100, 200, 400, 800, 1600] },
  async prepare(n) {
    const fire = await runAndWaitOp(n);
    // One operation is one run of 10 steps: offered steps/s ÷ 10 runs/s, figures back in steps.
    return {
      async step(rate, seconds) {
        const s = await openLoop({ rate: rate / 10, seconds, fire, maxInFlight: 1024 });
        return { ...s, offered: rate, achieved: s.achieved * 10 };
      },
      close: async () => undefined,
    };
  },
};

export const webhooks: Surface = {
  key: 'webhooks',
  title: 'Signed webhooks',
  operation: 'POST /v1/webhooks/bench, HMAC-SHA256 signed, its own X-Idempotency-Key; verified, deduplicated, recorded, a one-step run started',
  unit: 'webhooks/s',
  boundMs: 250,
  rates: { quick: [20, 60], full: [10, 25, 50, 100, 200, 400, 800] },
  prepare: async (n) => httpDriver(await webhookOp(n)),
};

export const executions: Surface = {
  key: 'executions',
  title: 'Agent executions (process sandbox, one model call)',
  operation: 'POST /v1/executions of a one-shot agent (bubblewrap sandbox, the node runtime, one call to a scripted model server), then GET /v1/executions/{id}/stream until its terminal event',
  unit: 'executions/s',
  boundMs: 5000,
  rates: { quick: [1, 2], full: [0.5, 1, 2, 4, 8, 16] },
  async prepare(n) {
    const op = await executionOp(n);
    return httpDriver(async () => void (await op()), 256);
  },
};

export const sealInvokes: Surface = {
  key: 'seal',
  title: 'SEAL tool calls',
  operation: 'POST /v1/seal/invoke of orch.tools.list, an envelope presigned (Ed25519) for one attested session, timestamped at send (token, signature, liveness, Redis replay record, policy, the tool)',
  unit: 'invokes/s',
  boundMs: 50,
  rates: { quick: [50, 200], full: [25, 50, 100, 200, 400, 800, 1600] },
  async prepare(n) {
    const session = await sealSession(n);
    let signed: SignedEnvelopes | undefined;
    let next = 0;
    const fire = (): Promise<void> => session.invoke(signed!, next++);
    return {
      async setup(rate, seconds) {
        // Signed before the step, as an agent signs its own calls: the node's side alone is under load.
        signed = await session.sign(Math.ceil(rate * seconds) + 16);
        next = 0;
      },
      step: (rate, seconds) => openLoop({ rate, seconds, fire }),
      close: async () => undefined,
    };
  },
};

/**
 * WebSocket subscribers of execution streams: x subscribers (the offered load), spread over 10 streams, each stream
 * sent one event per second, so every subscriber is owed one message per second (x messages/s in all). Events are
 * published on Redis as another node of the cluster would publish them (the node fans out what the bus brings);
 * latency is publish → the subscriber's message handler, both in this process (one clock).
 */
export const wsSubscribers: Surface = {
  key: 'ws',
  title: 'WebSocket subscribers (1 message/s each)',
  operation: 'subscribers of `execution:<id>` on GET /v1/ws, 10 streams; each subscriber is owed one event per second, published on Redis as another node would; latency from publish to the subscriber\'s handler',
  unit: 'subscribers',
  boundMs: 250,
  rates: { quick: [50, 200], full: [100, 300, 1000, 2000, 4000] },
  async prepare(n) {
    const STREAMS = 10;
    const agentId = await trivialAgent(n);
    const ids: string[] = [];
    for (let i = 0; i < STREAMS; i++) {
      const r = await n.request('POST', '/v1/executions', JSON.stringify({ agent_id: agentId, input: 'x' }), bearer(n));
      expect(r.status, [200, 201], r.body, 'execution start');
      ids.push((JSON.parse(r.body) as { execution_id: string }).execution_id);
    }
    // Wait for their ends (their history then ends at a known seq; later events continue from it).
    const deadline = Date.now() + 60_000;
    for (;;) {
      const r = await n.db.query<{ n: number }>(`SELECT count(*)::INT4 AS n FROM executions WHERE id = ANY($1) AND status IN ('completed', 'failed')`, [ids]);
      if ((r.rows[0]?.n ?? 0) >= STREAMS) break;
      if (Date.now() > deadline) throw new Error('the WebSocket surface\'s executions did not end in 60 s');
      await new Promise((r) => setTimeout(r, 200));
    }
    const seqs = await n.db.query<{ execution_id: string; s: number }>('SELECT execution_id, max(seq)::INT4 AS s FROM execution_events WHERE execution_id = ANY($1) GROUP BY execution_id', [ids]);
    const nextSeq = new Map(ids.map((id) => [id, (seqs.rows.find((r) => r.execution_id === id)?.s ?? 0) + 1]));
    const redis = new Redis(redisUrl());
    const sockets: WebSocket[] = [];
    let counting = false;
    /** Events published before this (a previous step's, late) are not this step's deliveries. */
    let stepStart = Number.POSITIVE_INFINITY;
    let received = 0;
    let closedEarly = 0;
    let lat: number[] = [];
    const now = (): number => performance.timeOrigin + performance.now();
    const open = async (stream: string): Promise<WebSocket> => {
      const ws = new WebSocket(`${n.base.replace(/^http/, 'ws')}/v1/ws`, { headers: bearer(n), perMessageDeflate: false });
      await new Promise<void>((resolve, reject) => {
        ws.once('open', () => resolve());
        ws.once('error', reject);
      });
      await new Promise<void>((resolve) => {
        ws.on('message', (data: Buffer) => {
          const text = data.toString();
          if (text.startsWith('{"subscribed"')) return resolve();
          const i = text.indexOf('"sent_at":');
          if (i < 0 || !counting) return;
          const sentAt = Number.parseFloat(text.slice(i + 10));
          if (sentAt < stepStart) return;
          lat.push(now() - sentAt);
          received++;
        });
        ws.on('close', () => void (closedEarly += 1));
        ws.on('error', () => undefined);
        ws.send(JSON.stringify({ subscribe: stream }));
      });
      return ws;
    };
    return {
      async setup(subscribers) {
        // Join the new subscribers (a few hundred handshakes at a time), round-robin over the streams.
        while (sockets.length < subscribers) {
          const batch = Math.min(200, subscribers - sockets.length);
          sockets.push(...(await Promise.all(Array.from({ length: batch }, (_, j) => open(`execution:${ids[(sockets.length + j) % STREAMS]}`)))));
        }
        await new Promise((r) => setTimeout(r, 500));
      },
      async step(subscribers, seconds) {
        const closed0 = closedEarly;
        // Events: one per second per stream, so each socket (subscribers/10 per stream) is owed one message a second
        // and the node delivers `subscribers` messages a second.
        const perSecond = STREAMS;
        const total = Math.round(perSecond * seconds);
        received = 0;
        lat = [];
        counting = true;
        const t0 = now();
        stepStart = t0;
        let sent = 0;
        let cursor = 0;
        while (sent < total) {
          const due = Math.min(total, Math.floor(((now() - t0) / 1000) * perSecond) + 1);
          if (due > sent) {
            const p = redis.pipeline();
            for (; sent < due; sent++) {
              const id = ids[cursor++ % STREAMS]!;
              const seq = nextSeq.get(id)!;
              nextSeq.set(id, seq + 1);
              p.publish(`orch:events:execution:${id}`, `{"stream":"execution:${id}","seq":${seq},"type":"iteration_output","at":"${new Date().toISOString()}","payload":{"execution_id":"${id}","iteration":1,"output":"tick","sent_at":${now()}}}`);
            }
            await p.exec();
          }
          await new Promise((r) => setTimeout(r, 10));
        }
        // Each event goes to every subscriber of its stream: the owed messages.
        const owed = Array.from({ length: total }, (_, k) => Math.floor(sockets.length / STREAMS) + ((k % STREAMS) < sockets.length % STREAMS ? 1 : 0)).reduce((a, b) => a + b, 0);
        const drainUntil = now() + 5000;
        while (received < owed && now() < drainUntil) await new Promise((r) => setTimeout(r, 50));
        counting = false;
        const window = Math.max(seconds, (now() - t0) / 1000);
        lat.sort((a, b) => a - b);
        const missing = Math.max(0, owed - received);
        return {
          offered: subscribers,
          // Carried subscribers: the share of owed messages that arrived (within 5 s after the last was sent).
          achieved: subscribers * Math.min(1, received / Math.max(1, owed)),
          ok: received,
          failed: missing + (closedEarly - closed0),
          shed: 0,
          p50Ms: percentile(lat, 50),
          p99Ms: percentile(lat, 99),
          ...(missing > 0 ? { firstError: `${missing} of ${owed} messages not delivered within 5 s` } : {}),
          seconds: window,
        };
      },
      async close() {
        for (const s of sockets) s.terminate();
        redis.disconnect();
      },
    };
  },
};

const HERE = path.dirname(fileURLToPath(import.meta.url));

/**
 * Worker heartbeats: the offered load is the number of simulated workers, each heartbeating once a second
 * open-loop (bench/heartbeat-load.ts: each its own Ed25519 key, attested token and gRPC connection; signing is the
 * workers' cost, in their processes). Each step joins the workers it adds in a new load process. A fixed fleet at a
 * shorter period is no substitute: a member's heartbeats must arrive in stamp order (an older stamp is a replay),
 * which heartbeats overlapping in flight would break.
 */
export const heartbeats: Surface = {
  key: 'heartbeats',
  title: 'Worker heartbeats (1 s period)',
  operation: 'NodeCluster/Heartbeat (sealed envelope) from simulated workers, each with its own key, token and connection, once a second, open-loop; the offered load is the number of workers',
  unit: 'heartbeats/s',
  boundMs: 250,
  rates: { quick: [10, 40], full: [50, 100, 200, 400, 800, 1600] },
  async prepare(n) {
    const children: ChildProcess[] = [];
    let workers = 0;
    const next = <T>(child: ChildProcess, type: string): Promise<T> =>
      new Promise((resolve, reject) => {
        const on = (m: { type: string; error?: string }): void => {
          if (m.type === 'error') reject(new Error(`heartbeat load: ${m.error}`));
          else if (m.type !== type) return;
          child.off('message', on);
          child.off('exit', onExit);
          resolve(m as T);
        };
        const onExit = (code: number | null): void => reject(new Error(`heartbeat load exited (${code})`));
        child.on('message', on);
        child.once('exit', onExit);
      });
    return {
      async setup(rate) {
        if (rate > workers) {
          const child: ChildProcess = fork(path.join(HERE, '..', 'heartbeat-load.ts'), [], { execArgv: ['--import', 'tsx'], stdio: ['ignore', 'ignore', 'inherit', 'ipc'] });
          children.push(child);
          const joined = next(child, 'joined');
          child.send({ address: n.cluster, from: workers, count: rate - workers, periodMs: 1000 });
          await joined;
          workers = rate;
          await new Promise((r) => setTimeout(r, 1500)); // every new worker past its first, random-phase beat
        }
      },
      async step(rate, seconds) {
        for (const c of children) c.send({ type: 'measure' });
        const t0 = performance.now();
        await new Promise((r) => setTimeout(r, seconds * 1000));
        const reports = await Promise.all(
          children.map((c) => {
            const r = next<{ sent: number; ok: number; errors: number; latencies: number[] }>(c, 'report');
            c.send({ type: 'report' });
            return r;
          }),
        );
        const window = (performance.now() - t0) / 1000;
        const ok = reports.reduce((a, r) => a + r.ok, 0);
        const errors = reports.reduce((a, r) => a + r.errors, 0);
        const lat = reports.flatMap((r) => r.latencies).sort((a, b) => a - b);
        // Answers still on their way when the report was taken are neither ok nor failed; they are left out.
        return { offered: rate, achieved: ok / window, ok, failed: errors, shed: 0, p50Ms: percentile(lat, 50), p99Ms: percentile(lat, 99), seconds: window, ...(errors ? { firstError: `${errors} heartbeats failed` } : {}) };
      },
      async close() {
        for (const c of children) c.send({ type: 'stop' });
        await new Promise((r) => setTimeout(r, 300));
        for (const c of children) c.kill('SIGKILL');
      },
    };
  },
};
