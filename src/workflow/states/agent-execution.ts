// Running one agent execution for a workflow state (Agent, and each judge of ParallelAgents) through the existing
// ExecutionService: started with an id derived from the visit (so a visit re-run after a crash finds the execution
// its first run started instead of starting another), linked by workflow_execution_id, and awaited until terminal.
// An abort (state timeout, workflow cancel) cancels the execution, unless the node is only handing over.
import type { AgentSource, ExecutionService, ExecutionView, ExtraVolume } from '../../agents/execution/service.ts';
import { isHandOver } from '../../agents/execution/errors.ts';
import type { Queryable } from '../../storage/db.ts';
import type { StateRunContext } from '../engine/runner-types.ts';

export interface AgentExecutionDeps {
  /** Late-bound: absent on a node that runs no agent executions. */
  executions: () => ExecutionService | undefined;
  /** Resolves an agent name or UUID (the agent registry). */
  agents: AgentSource;
  /** How often a waiting state re-reads the execution; default 250 ms. */
  pollMs?: number;
  /** The node's database, to read the semantic judges' verdicts an execution journaled (the Agent score). */
  db?: Queryable;
}

/**
 * The validation score of the execution's last iteration: the mean of its semantic judges' scores (and
 * confidences) as the refinement loop journaled them (`it<n>:judge:<agent>`); undefined when it had no judge.
 */
export async function judgedScore(db: Queryable, executionId: string, iteration: number): Promise<{ score: number; confidence?: number } | undefined> {
  const res = await db.query<{ result: { score?: unknown; confidence?: unknown } | null }>(
    `SELECT result FROM execution_journal WHERE execution_id = $1 AND kind = 'judge' AND step_key LIKE $2`,
    [executionId, `it${iteration}:judge:%`],
  );
  const scores = res.rows.map((r) => r.result?.score).filter((v): v is number => typeof v === 'number' && v >= 0 && v <= 1);
  if (scores.length === 0) return undefined;
  const confidences = res.rows.map((r) => r.result?.confidence).filter((v): v is number => typeof v === 'number' && v >= 0 && v <= 1);
  const mean = (xs: number[]): number => xs.reduce((a, b) => a + b, 0) / xs.length;
  return { score: mean(scores), ...(confidences.length ? { confidence: mean(confidences) } : {}) };
}

export interface AgentRunRequest {
  tenantId: string;
  agent: string;
  executionId: string;
  workflowExecutionId: string;
  input: string;
  intent?: string | undefined;
  pollMs?: number | undefined;
  signal: AbortSignal;
  /** The state's `volumes`, resolved to the workflow's spec.storage volumes (stateVolumes). */
  volumes?: ExtraVolume[] | undefined;
  /** The engine's wake-up (StateRunContext.wake): the execution's end wakes `execution:<id>`; absent: polled. */
  wake?: StateRunContext['wake'];
}

/**
 * The longest an Agent state waits for its execution's end without re-reading it when wake-ups are on. An execution
 * ends by many paths (its worker, a lost worker's sweep, a cancel, a supervisor's give-up), each of which tells the
 * run; this bounds the cost of one that does not (the engine's poll period, spec.workflow.poll_seconds, if shorter).
 */
export const AGENT_SAFETY_POLL_MS = 5_000;

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

/**
 * A state's `volumes` (seed 002 common state fields) as mounts of the workflow's own spec.storage volumes: each
 * `volume` is rendered (`{{workflow.storage.workspace}}` gives the volume id) and must then be the id — or the
 * name, `workspace` or a shared_volumes name — of one of this run's volumes; anything else fails the state naming it.
 */
export function stateVolumes(
  volumes: readonly { volume: string; mount_path: string; access_mode: 'read-write' | 'read-only' }[],
  ctx: Pick<StateRunContext, 'render' | 'storage' | 'stateName'>,
): ExtraVolume[] {
  const byId = new Map<string, string>();
  if (ctx.storage.workspace) byId.set(ctx.storage.workspace.toLowerCase(), 'workspace');
  for (const [name, id] of Object.entries(ctx.storage.shared)) byId.set(id.toLowerCase(), name);
  return volumes.map((v, i) => {
    const ref = ctx.render(v.volume).trim();
    let id: string | undefined;
    let name: string | undefined;
    if (UUID.test(ref) && byId.has(ref.toLowerCase())) {
      id = ref.toLowerCase();
      name = byId.get(id);
    } else if (ref === 'workspace' && ctx.storage.workspace) {
      id = ctx.storage.workspace;
      name = 'workspace';
    } else if (Object.hasOwn(ctx.storage.shared, ref)) {
      id = ctx.storage.shared[ref];
      name = ref;
    }
    if (!id || !name) {
      const declared = [...(ctx.storage.workspace ? ['workspace'] : []), ...Object.keys(ctx.storage.shared)];
      throw new Error(`volumes[${i}] of state "${ctx.stateName}": "${ref}" (from ${JSON.stringify(v.volume)}) is not a volume of this workflow's spec.storage ` +
        `(declared: ${declared.length > 0 ? declared.join(', ') : 'none'})`);
    }
    return { volumeId: id, name, mountPath: v.mount_path, accessMode: v.access_mode };
  });
}

const TERMINAL = new Set(['completed', 'failed', 'cancelled']);

function sleep(ms: number, signal: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    const done = (): void => {
      clearTimeout(timer);
      signal.removeEventListener('abort', done);
      resolve();
    };
    const timer = setTimeout(done, ms);
    signal.addEventListener('abort', done, { once: true });
  });
}

/**
 * Waits (at most `timeoutMs`) until an ended execution has given its volumes back: its grants are revoked after its
 * FUSE mounts are gone. The FUSE daemon holds one mount per volume, so the next state's execution could not mount
 * the same workflow volume while this one still holds it. Answers whether they were released in time.
 */
export async function volumesReleased(db: Queryable, executionId: string, signal: AbortSignal, timeoutMs = 30_000, pollMs = 100): Promise<boolean> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const res = await db.query<{ n: number }>('SELECT count(*)::INT4 AS n FROM volume_grants WHERE execution_id = $1', [executionId]);
    if (Number(res.rows[0]?.n ?? 0) === 0) return true;
    if (Date.now() >= deadline || signal.aborted) return false;
    await sleep(pollMs, signal);
  }
}

/** Starts (or finds) the execution and answers its terminal view. Throws the abort reason when aborted. */
export async function runAgentExecution(deps: AgentExecutionDeps, r: AgentRunRequest): Promise<ExecutionView> {
  const svc = deps.executions();
  if (!svc) throw new Error('agent executions are not available on this node');
  const agent = await deps.agents.getManifest(r.tenantId, r.agent);
  await svc.start({
    tenant: r.tenantId,
    agentId: agent.agent_id,
    input: r.input,
    executionId: r.executionId,
    workflowExecutionId: r.workflowExecutionId,
    ...(r.intent !== undefined ? { contextJson: JSON.stringify({ intent: r.intent }) } : {}),
    ...(r.volumes && r.volumes.length > 0 ? { volumes: r.volumes } : {}),
  });
  // The execution's end wakes us; a poll interval the manifest set (a judge's poll_interval_ms) still bounds the wait.
  const wake = r.wake;
  const net = r.pollMs ?? AGENT_SAFETY_POLL_MS;
  const pollMs = r.pollMs ?? deps.pollMs ?? 250;
  for (;;) {
    // Armed before the read: an end told while the row is being read is not lost.
    const stop = new AbortController();
    const woken = wake?.(`execution:${r.executionId}`, net, AbortSignal.any([r.signal, stop.signal]));
    try {
      const view = await svc.get(r.tenantId, r.executionId);
      if (TERMINAL.has(view.status)) return view;
      if (r.signal.aborted) {
        if (!isHandOver(r.signal.reason)) await svc.cancel(r.tenantId, r.executionId).catch(() => undefined);
        throw r.signal.reason;
      }
      await (woken ?? sleep(pollMs, r.signal));
    } finally {
      stop.abort();
    }
  }
}
