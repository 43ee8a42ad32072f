// What the workflow registry hands out. WorkflowDefinition is the contract with the engine (H6) and the Subworkflow
// runner: one deployed version of one workflow, as resolved for a caller.
import type { WorkflowManifest } from '../manifest/types.ts';

export type WorkflowScope = 'user' | 'tenant' | 'global';

export const WORKFLOW_SCOPES: readonly WorkflowScope[] = ['user', 'tenant', 'global'];

export interface WorkflowDefinition {
  /** The workflow_id of this version (kept when the same name and version is redeployed with force). */
  id: string;
  name: string;
  version: string;
  scope: WorkflowScope;
  /** The tenant the row is stored in: `orch-system` for global workflows. */
  tenant_id: string;
  manifest: WorkflowManifest;
  manifest_yaml: string;
  created_at: string;
}

/** One workflow (a name in one scope) with its latest version: GET /v1/workflows and orch.workflow.list. */
export interface WorkflowSummary {
  id: string;
  workflow_id: string;
  name: string;
  version: string;
  scope: WorkflowScope;
  tenant_id: string;
  /** The user who owns a user-scoped workflow; null otherwise. */
  owner: string | null;
  description: string | null;
  labels: Record<string, string>;
  initial_state: string;
  versions: number;
  created_at: string;
  updated_at: string;
}

export interface WorkflowDetail extends WorkflowDefinition {
  workflow_id: string;
  owner: string | null;
  deployed_by: string;
  description: string | null;
  labels: Record<string, string>;
  updated_at: string;
}

export interface WorkflowVersionInfo {
  workflow_id: string;
  version: string;
  latest: boolean;
  deployed_by: string;
  created_at: string;
  updated_at: string;
}
