// The workflow registry over HTTP (CONTRACT.md): deploy, list, get, delete, versions, promote and demote. Deploy
// bodies: JSON `{manifest_yaml, force?, scope?}`, or the raw YAML itself with Content-Type application/yaml or
// text/yaml (then `?force=true&scope=...`). A bad manifest is 422 `{"error": "invalid workflow manifest",
// "errors": [{field, message}]}` and writes nothing. `{name}` is a workflow name or a workflow_id.
// Runs and executions (/v1/workflows/{name}/run, /v1/workflows/executions/*) are registered by
// workflow-execution-routes.ts; the static `executions` segment wins over `{name}` in the router.
// All of it is WorkflowDefinitionService; this file only translates. The routes live in their own encapsulated
// scope so the YAML body parser applies to them only.
import type { FastifyInstance } from 'fastify';
import {
  WORKFLOW_SCOPES,
  WorkflowManifestInvalid,
  type ListFilter,
  type WorkflowDefinitionService,
  type WorkflowScope,
} from '../../workflow/registry/service.ts';
import { deployInput, manifestErrors, viewerOf, type DeployBody, type DeployQuery } from './deploy-input.ts';
import { YAML_TYPES, type RequestOf } from './request-schemas.ts';

/** The manifest text and options of a deploy (deploy-input.ts), scoped to the workflow scopes. */
function workflowDeployInput(body: DeployBody, query: DeployQuery): { yaml: string; force: boolean; scope?: WorkflowScope } {
  return deployInput(body, query, WORKFLOW_SCOPES, 'body must be {"manifest_yaml": "...", "force"?: bool, "scope"?: "user"|"tenant"|"global"} or the YAML itself (Content-Type: application/yaml)');
}

/** A promote or demote body (its route schema checked each field is a non-empty string or null) without the nulls. */
function scopeChange(body: RequestOf<'POST /v1/workflows/:name/promote'>['Body']): { target_scope?: string; user_id?: string; version?: string } {
  const { target_scope: target, user_id: user, version } = body ?? {};
  return { ...(target ? { target_scope: target } : {}), ...(user ? { user_id: user } : {}), ...(version ? { version } : {}) };
}

export async function registerWorkflowRoutes(app: FastifyInstance, workflows: WorkflowDefinitionService): Promise<void> {
  await app.register(async (scope) => {
    scope.addContentTypeParser(YAML_TYPES, { parseAs: 'string' }, (_request, body, done) => done(null, body));

    scope.post<RequestOf<'POST /v1/workflows'>>('/v1/workflows', async (request, reply) => {
      const { tenant, viewer } = viewerOf(request);
      const input = workflowDeployInput(request.body, request.query);
      return manifestErrors(reply, WorkflowManifestInvalid, async () => {
        const res = await workflows.deploy({ tenant, ...viewer, ...input });
        return reply.status(201).send({ workflow_id: res.workflow_id, name: res.name, version: res.version, scope: res.scope, replaced: res.replaced });
      });
    });

    scope.get<RequestOf<'GET /v1/workflows'>>('/v1/workflows', async (request) => {
      const { tenant, viewer } = viewerOf(request);
      const filter: ListFilter = request.query.scope ?? 'visible';
      return { workflows: await workflows.list(tenant, viewer, filter) };
    });

    scope.get<RequestOf<'GET /v1/workflows/:name'>>('/v1/workflows/:name', async (request) => {
      const { tenant, viewer } = viewerOf(request);
      return workflows.get(tenant, request.params.name, viewer, request.query.version);
    });

    scope.delete<RequestOf<'DELETE /v1/workflows/:name'>>('/v1/workflows/:name', async (request) => {
      const { tenant, viewer } = viewerOf(request);
      return workflows.remove(tenant, request.params.name, viewer, request.query.version);
    });

    scope.get<RequestOf<'GET /v1/workflows/:name/versions'>>('/v1/workflows/:name/versions', async (request) => {
      const { tenant, viewer } = viewerOf(request);
      return workflows.versions(tenant, request.params.name, viewer);
    });

    scope.post<RequestOf<'POST /v1/workflows/:name/promote'>>('/v1/workflows/:name/promote', async (request) => {
      const { tenant, viewer } = viewerOf(request);
      const res = await workflows.promote(tenant, request.params.name, viewer, scopeChange(request.body));
      return { ...res, promoted: true };
    });

    scope.post<RequestOf<'POST /v1/workflows/:name/demote'>>('/v1/workflows/:name/demote', async (request) => {
      const { tenant, viewer } = viewerOf(request);
      const res = await workflows.demote(tenant, request.params.name, viewer, scopeChange(request.body));
      return { ...res, demoted: true };
    });
  });
}
