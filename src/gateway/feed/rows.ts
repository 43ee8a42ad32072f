// The rows the list-level feed streams carry (`executions`, `workflows`, `approvals`): compact summaries read straight
// from the capability tables, by id (an event names only the entity, not its tenant) or as a tenant's snapshot.
// Read-only; every tenant-facing read is filtered by the tenant the hub routes to.
import type { Queryable } from '../../storage/db.ts';

export interface ExecutionRowSummary {
  execution_id: string;
  tenant_id: string;
  agent_id: string;
  agent_name: string;
  agent_version: string;
  status: string;
  iteration: number;
  input: string;
  reason: string | null;
  workflow_execution_id: string | null;
  usage: { prompt_tokens: number; completion_tokens: number };
  created_at: string;
  started_at: string | null;
  completed_at: string | null;
  updated_at: string;
}

export interface WorkflowGraph {
  initial_state: string | null;
  states: { name: string; kind: string; targets: { target: string; condition: string }[] }[];
}

export interface WorkflowRowSummary {
  execution_id: string;
  tenant_id: string;
  workflow_name: string;
  workflow_version: string;
  status: string;
  current_state: string | null;
  total_transitions: number;
  error: string | null;
  last_seq: number;
  graph: WorkflowGraph;
  created_at: string;
  started_at: string;
  completed_at: string | null;
  updated_at: string;
}

export interface ApprovalRowSummary {
  id: string;
  tenant_id: string;
  execution_id: string;
  state_name: string;
  prompt: string;
  status: string;
  timeout_seconds: number | null;
  deadline: string | null;
  created_at: string;
  resolved_at: string | null;
}

const INPUT_PREVIEW = 200;

function iso(d: Date | string | null): string | null {
  if (d === null || d === undefined) return null;
  return (d instanceof Date ? d : new Date(d)).toISOString();
}

const EXEC_COLS = `id, tenant_id, agent_id, agent_name, agent_version, status, iteration, input, reason, workflow_execution_id,
  prompt_tokens, completion_tokens, created_at, started_at, completed_at, updated_at`;

interface ExecRow {
  id: string;
  tenant_id: string;
  agent_id: string;
  agent_name: string;
  agent_version: string;
  status: string;
  iteration: number;
  input: string;
  reason: string | null;
  workflow_execution_id: string | null;
  prompt_tokens: number;
  completion_tokens: number;
  created_at: Date;
  started_at: Date | null;
  completed_at: Date | null;
  updated_at: Date;
}

function execSummary(r: ExecRow): ExecutionRowSummary {
  return {
    execution_id: r.id,
    tenant_id: r.tenant_id,
    agent_id: r.agent_id,
    agent_name: r.agent_name,
    agent_version: r.agent_version,
    status: r.status,
    iteration: Number(r.iteration),
    input: r.input.length > INPUT_PREVIEW ? `${r.input.slice(0, INPUT_PREVIEW)}…` : r.input,
    reason: r.reason,
    workflow_execution_id: r.workflow_execution_id,
    usage: { prompt_tokens: Number(r.prompt_tokens), completion_tokens: Number(r.completion_tokens) },
    created_at: iso(r.created_at)!,
    started_at: iso(r.started_at),
    completed_at: iso(r.completed_at),
    updated_at: iso(r.updated_at)!,
  };
}

export async function readExecution(db: Queryable, id: string): Promise<ExecutionRowSummary | null> {
  const res = await db.query<ExecRow>(`SELECT ${EXEC_COLS} FROM executions WHERE id = $1`, [id]);
  return res.rows[0] ? execSummary(res.rows[0]) : null;
}

/**
 * A tenant's most recent rows of `table`, newest first, then every row still in one of `live` statuses whatever its
 * age (a long-running one must not fall off the snapshot).
 */
async function recentAndLive<R extends { id: string }>(db: Queryable, table: string, cols: string, live: readonly string[], tenant: string, limit: number): Promise<R[]> {
  // `table`, `cols` and `live` are constants of this file, never caller input.
  const statuses = live.map((x) => `'${x}'`).join(', ');
  const recent = await db.query<R>(`SELECT ${cols} FROM ${table} WHERE tenant_id = $1 ORDER BY created_at DESC LIMIT $2`, [tenant, limit]);
  const running = await db.query<R>(`SELECT ${cols} FROM ${table} WHERE tenant_id = $1 AND status IN (${statuses}) ORDER BY created_at DESC LIMIT $2`, [tenant, limit]);
  const seen = new Set(recent.rows.map((r) => r.id));
  return [...recent.rows, ...running.rows.filter((r) => !seen.has(r.id))];
}

/** The tenant's most recent executions, newest first, and every one still running whatever its age. */
export async function snapshotExecutions(db: Queryable, tenant: string, limit: number): Promise<ExecutionRowSummary[]> {
  return (await recentAndLive<ExecRow>(db, 'executions', EXEC_COLS, ['pending', 'running'], tenant, limit)).map(execSummary);
}

interface WfRow {
  id: string;
  tenant_id: string;
  workflow_name: string;
  workflow_version: string;
  status: string;
  current_state: string | null;
  total_transitions: number;
  error: string | null;
  last_seq: number;
  spec: { initial_state?: string; states?: Record<string, { kind?: string; transitions?: { target?: string; condition?: string }[] }> } | null;
  created_at: Date;
  started_at: Date;
  completed_at: Date | null;
  updated_at: Date;
}

const WF_COLS = `id, tenant_id, workflow_name, workflow_version, status, current_state, total_transitions, error, last_seq,
  manifest->'spec' AS spec, created_at, started_at, completed_at, updated_at`;

export function graphOf(spec: WfRow['spec']): WorkflowGraph {
  const states = Object.entries(spec?.states ?? {}).map(([name, s]) => ({
    name,
    kind: String(s?.kind ?? ''),
    targets: (Array.isArray(s?.transitions) ? s.transitions : [])
      .filter((t) => typeof t?.target === 'string')
      .map((t) => ({ target: t.target!, condition: String(t.condition ?? 'always') })),
  }));
  return { initial_state: spec?.initial_state ?? null, states };
}

function wfSummary(r: WfRow): WorkflowRowSummary {
  return {
    execution_id: r.id,
    tenant_id: r.tenant_id,
    workflow_name: r.workflow_name,
    workflow_version: r.workflow_version,
    status: r.status,
    current_state: r.current_state,
    total_transitions: Number(r.total_transitions),
    error: r.error,
    last_seq: Number(r.last_seq),
    graph: graphOf(r.spec),
    created_at: iso(r.created_at)!,
    started_at: iso(r.started_at)!,
    completed_at: iso(r.completed_at),
    updated_at: iso(r.updated_at)!,
  };
}

export async function readWorkflow(db: Queryable, id: string): Promise<WorkflowRowSummary | null> {
  const res = await db.query<WfRow>(`SELECT ${WF_COLS} FROM workflow_executions WHERE id = $1`, [id]);
  return res.rows[0] ? wfSummary(res.rows[0]) : null;
}

export async function snapshotWorkflows(db: Queryable, tenant: string, limit: number): Promise<WorkflowRowSummary[]> {
  return (await recentAndLive<WfRow>(db, 'workflow_executions', WF_COLS, ['running', 'waiting_for_human_input'], tenant, limit)).map(wfSummary);
}

interface ApprovalRow {
  id: string;
  tenant_id: string;
  workflow_execution_id: string;
  state_name: string;
  prompt: string;
  status: string;
  timeout_seconds: number | null;
  deadline: Date | null;
  created_at: Date;
  resolved_at: Date | null;
}

const APPROVAL_COLS = 'id, tenant_id, workflow_execution_id, state_name, prompt, status, timeout_seconds, deadline, created_at, resolved_at';

function approvalSummary(r: ApprovalRow): ApprovalRowSummary {
  return {
    id: r.id,
    tenant_id: r.tenant_id,
    execution_id: r.workflow_execution_id,
    state_name: r.state_name,
    prompt: r.prompt,
    status: r.status,
    timeout_seconds: r.timeout_seconds === null ? null : Number(r.timeout_seconds),
    deadline: iso(r.deadline),
    created_at: iso(r.created_at)!,
    resolved_at: iso(r.resolved_at),
  };
}

/** Every approval of one workflow run (pending and resolved): the list drops those no longer pending. */
export async function readApprovalsOf(db: Queryable, workflowExecutionId: string): Promise<ApprovalRowSummary[]> {
  const res = await db.query<ApprovalRow>(`SELECT ${APPROVAL_COLS} FROM approvals WHERE workflow_execution_id = $1 ORDER BY created_at`, [workflowExecutionId]);
  return res.rows.map(approvalSummary);
}

export async function snapshotApprovals(db: Queryable, tenant: string, limit: number): Promise<ApprovalRowSummary[]> {
  const res = await db.query<ApprovalRow>(
    `SELECT ${APPROVAL_COLS} FROM approvals WHERE tenant_id = $1 AND status = 'pending' ORDER BY created_at LIMIT $2`,
    [tenant, limit],
  );
  return res.rows.map(approvalSummary);
}
