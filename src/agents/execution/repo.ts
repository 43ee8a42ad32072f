// SQL for the executions table. Every read is scoped by tenant except the ones the owning actor makes by id.
import type { Queryable } from '../../storage/db.ts';
import { listTenantRuns, type RunPage } from '../../storage/run-list.ts';
import type { LeasedTable } from '../../actors/leased-row/table.ts';
import type { AgentManifest } from '../manifest/types.ts';

export type ExecutionStatus = 'pending' | 'running' | 'completed' | 'failed' | 'cancelled';
export const NON_TERMINAL: readonly ExecutionStatus[] = ['pending', 'running'];
/** The rows an ExecutionActor drives, for the leased-row claim and recovery queries. */
export const EXECUTIONS_TABLE: LeasedTable = { table: 'executions', keyColumn: 'id', activeStatuses: NON_TERMINAL };

export function isTerminal(status: string): boolean {
  return status === 'completed' || status === 'failed' || status === 'cancelled';
}

export interface ExecutionRow {
  id: string;
  tenant_id: string;
  agent_id: string;
  agent_name: string;
  agent_version: string;
  manifest: AgentManifest;
  input: string;
  context_json: string | null;
  workflow_execution_id: string | null;
  status: ExecutionStatus;
  iteration: number;
  final_output: string | null;
  reason: string | null;
  container_id: string | null;
  /** SHA-256 (hex) of the attestation secret in a process sandbox's environment (migration 040); never shown. */
  attestation_secret_sha256?: string | null;
  cancel_requested: boolean;
  prompt_tokens: number;
  completion_tokens: number;
  owner_node: string | null;
  lease_expires_at: Date | null;
  epoch: number;
  created_at: Date;
  started_at: Date | null;
  completed_at: Date | null;
  updated_at: Date;
}

export interface NewExecution {
  id: string;
  tenantId: string;
  agentId: string;
  agentName: string;
  agentVersion: string;
  manifest: AgentManifest;
  input: string;
  contextJson?: string | undefined;
  workflowExecutionId?: string | undefined;
  /** The node that will run it; the row is claimed for it at once so no other node's recovery takes it. */
  ownerNode: string;
  leaseMs: number;
}

/** One statement: callers run it on its own (its own transaction) or inside theirs. Nothing is read back: the row
 * holds the manifest and input, and parsing them back cost every start (issue 24). */
export async function insertExecution(tx: Queryable, e: NewExecution): Promise<void> {
  await tx.query(
    `INSERT INTO executions (id, tenant_id, agent_id, agent_name, agent_version, manifest, input, context_json,
       workflow_execution_id, status, owner_node, lease_expires_at, epoch)
     VALUES ($1, $2, $3, $4, $5, $6::JSONB, $7, $8, $9, 'pending', $10, now() + ($11::INT4 * INTERVAL '1 millisecond'), 0)`,
    [
      e.id,
      e.tenantId,
      e.agentId,
      e.agentName,
      e.agentVersion,
      JSON.stringify(e.manifest),
      e.input,
      e.contextJson ?? null,
      e.workflowExecutionId ?? null,
      e.ownerNode,
      e.leaseMs,
    ],
  );
}

export async function getExecution(db: Queryable, id: string): Promise<ExecutionRow | undefined> {
  return (await db.query<ExecutionRow>('SELECT * FROM executions WHERE id = $1', [id])).rows[0];
}

export async function getTenantExecution(db: Queryable, tenantId: string, id: string): Promise<ExecutionRow | undefined> {
  return (await db.query<ExecutionRow>('SELECT * FROM executions WHERE id = $1 AND tenant_id = $2', [id, tenantId])).rows[0];
}

export interface ListFilter extends RunPage {
  agentId?: string | undefined;
}

export async function listExecutions(db: Queryable, tenantId: string, f: ListFilter): Promise<ExecutionRow[]> {
  return listTenantRuns<ExecutionRow>(db, 'executions', tenantId, f, (bind) => (f.agentId ? [`agent_id = ${bind(f.agentId)}`] : []));
}

export async function deleteExecution(tx: Queryable, tenantId: string, id: string): Promise<number> {
  await tx.query('DELETE FROM execution_events WHERE execution_id = $1', [id]);
  await tx.query('DELETE FROM execution_journal WHERE execution_id = $1', [id]);
  const res = await tx.query('DELETE FROM executions WHERE id = $1 AND tenant_id = $2', [id, tenantId]);
  return res.rowCount;
}
