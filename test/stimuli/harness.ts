// Shared by the stimulus tests: an in-process orch node over a throwaway PostgreSQL database, with workflows whose
// System states (update_blackboard) run without an LLM, a router agent answered by the scripted LLM server, dev
// tokens, and small HTTP/gRPC helpers.
import { credentials, Metadata, type ServiceError } from '@grpc/grpc-js';
import { silentLogger } from '../../src/logging/logger.ts';
import type { RunningNode } from '../../src/node/node.ts';
import { WorkflowDefinitionService } from '../../src/workflow/registry/service.ts';
import { AgentService } from '../../src/agents/service.ts';
import { OrchRuntimeClient, type IngestStimulusRequest, type IngestStimulusResponse } from '../../src/gen/orch/runtime/v1/runtime.js';
import { createTestDatabase, type TestDatabase } from '../support/pg.ts';
import { startTestNode, type Defer } from '../support/in-process-node.ts';

export { eventually } from '../support/node-process.ts';

export const workflowYaml = (name: string, extra = ''): string => `apiVersion: orch.dev/v1
kind: Workflow
metadata:
  name: ${name}
  version: 1.0.0
${extra}spec:
  initial_state: note
  states:
    note:
      kind: System
      command: 'update_blackboard {"seen": "{{input.repo}}"}'
      transitions: []
`;

export const routerAgentYaml = `apiVersion: orch.dev/v1
kind: Agent
metadata: { name: router, version: 1.0.0 }
spec:
  runtime: { language: node, version: "20", model: default }
  task: { instruction: You route incoming events to workflows. }
`;

export interface Harness {
  node: RunningNode;
  db: TestDatabase;
  dataDir: string;
  http: string;
  token(tenant?: string): Promise<string>;
  /** A dev token with a role (operator, tenant-admin, user). */
  roleToken(role: 'operator' | 'tenant-admin' | 'user', tenant?: string): Promise<string>;
  api<T = Record<string, unknown>>(method: string, url: string, o?: { body?: unknown; token?: string; headers?: Record<string, string> }): Promise<{ status: number; body: T }>;
  grpc: InstanceType<typeof OrchRuntimeClient>;
  ingest(req: Partial<IngestStimulusRequest>, token?: string): Promise<{ code: number; res?: IngestStimulusResponse; details?: string; metadata?: Metadata }>;
  deployWorkflow(tenant: string, yaml: string): Promise<void>;
  deployRouter(tenant: string): Promise<void>;
}

export type { Defer };

export async function startHarness(defer: Defer, stimuliYaml: string, o: { db?: TestDatabase; llmUrl?: string } = {}): Promise<Harness> {
  const db = o.db ?? (await createTestDatabase({ migrated: true }));
  if (!o.db) defer(() => db.drop());
  const n = await startTestNode(defer, { name: 'stim', databaseUrl: db.url, llmUrl: o.llmUrl, extraYaml: stimuliYaml });
  const { node, http } = n;
  const admin = await n.token();
  const grpc = new OrchRuntimeClient(node.addresses.grpc, credentials.createInsecure());
  defer(() => grpc.close());
  const workflows = new WorkflowDefinitionService(node.db, silentLogger());
  const agents = new AgentService(node.db, silentLogger());
  return {
    node,
    db,
    dataDir: n.dataDir,
    http,
    grpc,
    token: (tenant) => n.token(tenant),
    roleToken: (role, tenant) => n.token(tenant, role),
    api: (method, url, opt = {}) => n.api(method, url, opt.body, opt.token ?? admin, opt.headers),
    ingest(req, token = admin) {
      const md = new Metadata();
      if (token !== '') md.set('authorization', `Bearer ${token}`);
      const full: IngestStimulusRequest = { source_name: '', content: '', headers: {}, ...req };
      return new Promise((resolve) => {
        grpc.ingestStimulus(full, md, { deadline: Date.now() + 60_000 }, (err: ServiceError | null, res?: IngestStimulusResponse) => {
          if (err) resolve({ code: err.code, details: err.details, metadata: err.metadata });
          else resolve({ code: 0, ...(res ? { res } : {}) });
        });
      });
    },
    async deployWorkflow(tenant, yaml) {
      await workflows.deploy({ tenant, subject: 'dev-user', yaml });
    },
    async deployRouter(tenant) {
      await agents.deploy({ tenant, subject: 'dev-user', yaml: routerAgentYaml });
    },
  };
}

