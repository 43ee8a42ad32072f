// The rows the dashboard shows, as the feed and the /v1 API send them.
import type { Graph } from './graph.tsx';

export interface Execution {
  execution_id: string;
  agent_id?: string;
  agent_name: string;
  agent_version: string;
  tenant_id?: string;
  status: string;
  iteration: number;
  input: string;
  reason: string | null;
  workflow_execution_id: string | null;
  usage: { prompt_tokens: number; completion_tokens: number };
  created_at: string;
  completed_at: string | null;
}
export interface Workflow {
  execution_id: string;
  workflow_name: string;
  workflow_version: string;
  status: string;
  current_state: string | null;
  total_transitions: number;
  error: string | null;
  graph: Graph;
  created_at: string;
  completed_at: string | null;
}
export interface Approval {
  id: string;
  execution_id: string;
  state_name: string;
  prompt: string;
  created_at: string;
  deadline: string | null;
}
export interface NodeRow {
  node_id: string;
  role: string;
  status: string;
  load: Record<string, unknown> | null;
  heartbeat_count: number;
  last_heartbeat_at: string | null;
}
export interface AgentSummary {
  agent_id: string;
  name: string;
  version: string;
}
export interface WorkflowSummary {
  id: string;
  name: string;
  version: string;
}

export type Selection = { kind: 'execution' | 'workflow'; id: string } | undefined;

export function ago(iso: string | null | undefined): string {
  if (!iso) return '';
  const s = Math.max(0, Math.round((Date.now() - Date.parse(iso)) / 1000));
  if (s < 60) return `${s}s`;
  if (s < 3600) return `${Math.floor(s / 60)}m`;
  if (s < 86400) return `${Math.floor(s / 3600)}h`;
  return `${Math.floor(s / 86400)}d`;
}

export function duration(ms: number | null | undefined): string {
  if (ms === null || ms === undefined) return '–';
  if (ms < 1000) return `${Math.round(ms)} ms`;
  if (ms < 60_000) return `${(ms / 1000).toFixed(1)} s`;
  return `${Math.floor(ms / 60_000)} m ${Math.round((ms % 60_000) / 1000)} s`;
}

export const shortId = (id: string): string => id.slice(0, 8);
