// Worker loss → work resumed (issue 7; `npm run bench -- worker-loss`). Real processes: one controller and two
// workers (`orch up`, 1 s heartbeat, 3 missed allowed) on PostgreSQL, a scripted model. Each round an execution is
// routed to one worker and held by the model; that worker is SIGKILLed, and the controller hands the execution to the
// other, which resumes it from its journal and asks the model again for the interrupted step. Per round:
//   detected — SIGKILL → the controller's `lost:` event (recorded_at, written when it took the row back);
//   handed   — SIGKILL → the `resumed:` event (the row handed to the survivor);
//   resumed  — SIGKILL → the survivor's model request for the interrupted step reaches the scripted model;
//   detected → resumed — the last minus the first: what the "work resumed under 10 s" counts after detection.
// A fresh worker replaces the killed one before the next round.
import { eventually, type NodeProcess } from '../test/support/node-process.ts';
import { startScriptedLlm, type ChatRequest } from '../test/support/scripted-llm.ts';
import { allActive, Cleanup, conversation, llmProviders, nodeStarter, scratch } from '../test/cluster/processes.ts';
import { api } from '../test/cluster/support.ts';

const AGENT = `apiVersion: orch.dev/v1
kind: Agent
metadata: { name: resumable, version: 1.0.0 }
spec:
  runtime: { language: node, version: "20", isolation: process, model: default }
  task: { instruction: Answer. }
  execution: { mode: one-shot, max_iterations: 1, llm_timeout_seconds: 300, iteration_timeout: 300, validation: [] }
  security: { resources: { timeout: 600 } }
`;

export interface ResumeSample {
  detectedMs: number;
  handedMs: number;
  resumedMs: number;
}

export async function benchWorkerResume(rounds: number, out: (line: string) => void): Promise<ResumeSample[]> {
  // Per round key: the wall-clock times (ms since epoch) at which the model was asked.
  const asks = new Map<string, number[]>();
  const holds: (() => void)[] = [];
  const cleanup = new Cleanup();
  const samples: ResumeSample[] = [];
  try {
    const llm = await startScriptedLlm(async (body: ChatRequest) => {
      const m = /hold:(\w+)/.exec(conversation(body));
      if (m?.[1]) {
        const seen = asks.get(m[1]) ?? [];
        seen.push(Date.now());
        asks.set(m[1], seen);
        // The first ask is held (its worker is killed while it waits); the survivor's ask is answered.
        if (seen.length === 1) await new Promise<void>((r) => holds.push(r));
      }
      return { content: 'done' };
    });
    cleanup.teardown(() => {
      for (const h of holds) h();
      return llm.close();
    });
    const s = await scratch(cleanup, 'orch-bench-resume-');
    const db = s.db;
    const startNode = nodeStarter(cleanup, s, { env: { ORCH_LOG_LEVEL: 'warn' } });
    const nodes = new Map<string, NodeProcess>();
    const start = async (name: string, spec: string): Promise<NodeProcess> => {
      const node = await startNode(name, spec);
      nodes.set(name, node);
      return node;
    };
    const ctl = await start('ctl', '  node: { id: ctl, role: controller }\n  cluster: { heartbeat_interval_seconds: 1, missed_heartbeats: 3 }\n');
    const C = { http: ctl.banner.http, token: ctl.banner.dev_token ?? '' };
    let next = 0;
    const addWorker = async (): Promise<string> => {
      const id = `w${next++}`;
      await start(id, `  node: { id: ${id}, role: worker }\n  cluster: { controller: "${ctl.banner.cluster}", heartbeat_interval_seconds: 1, missed_heartbeats: 3 }\n${llmProviders(llm.url)}`);
      await allActive(C, [id], 60_000, `${id} to join`);
      return id;
    };
    await addWorker();
    await addWorker();
    const dep = await api<{ agent_id: string }>(C, 'POST', '/v1/agents', { manifest_yaml: AGENT });
    if (dep.status !== 201) throw new Error(`deploy: ${JSON.stringify(dep.body)}`);
    for (let r = 0; r < rounds; r++) {
      const key = `r${r}`;
      const ex = await api<{ execution_id: string }>(C, 'POST', '/v1/executions', { agent_id: dep.body.agent_id, input: `hold:${key}` });
      const id = ex.body.execution_id;
      await eventually(async () => (asks.get(key)?.length === 1 ? true : undefined), 60_000, 'the execution to ask the model');
      const victim = (await db.query<{ owner_node: string }>('SELECT owner_node FROM executions WHERE id = $1', [id])).rows[0]!.owner_node;
      const killedAt = Date.now();
      await nodes.get(victim)!.kill('SIGKILL');
      const resumedAt = await eventually(async () => asks.get(key)?.[1], 60_000, 'the survivor to ask the model again');
      const done = await eventually(async () => {
        const d = await api<{ status: string; reason: string | null }>(C, 'GET', `/v1/executions/${id}`);
        return d.body.status === 'pending' || d.body.status === 'running' ? undefined : d.body;
      }, 60_000, 'the execution to finish');
      if (done.status !== 'completed') throw new Error(`round ${r}: ${done.status} (${done.reason ?? ''})`);
      const recorded = await db.query<{ key: string; at: Date }>(
        `SELECT event_key AS key, recorded_at AS at FROM execution_events WHERE execution_id = $1 AND (event_key LIKE 'lost:%' OR event_key LIKE 'resumed:%') ORDER BY seq`,
        [id],
      );
      const lostAt = recorded.rows.find((x) => x.key.startsWith('lost:'))?.at.getTime() ?? Number.NaN;
      const handedAt = recorded.rows.find((x) => x.key.startsWith('resumed:'))?.at.getTime() ?? Number.NaN;
      const s = { detectedMs: lostAt - killedAt, handedMs: handedAt - killedAt, resumedMs: resumedAt - killedAt };
      samples.push(s);
      out(`  round ${r + 1}: loss recorded ${Math.round(s.detectedMs)} ms, handed over ${Math.round(s.handedMs)} ms, survivor asked the model ${Math.round(s.resumedMs)} ms after SIGKILL`);
      nodes.delete(victim);
      if (r + 1 < rounds) await addWorker();
    }
  } finally {
    await cleanup.run();
  }
  return samples;
}
