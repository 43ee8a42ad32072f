// The agent registry over HTTP (seed 000 and CONTRACT.md). Deploy bodies: JSON `{manifest_yaml, force?, scope?}`,
// or the raw YAML itself with Content-Type application/yaml or text/yaml (then `?force=true&scope=...`). A bad
// manifest is 422 `{"error": "invalid agent manifest", "errors": [{field, message}]}`. `{id}` is a UUID or a name.
// All of it is AgentService; this file only translates. The routes live in their own encapsulated scope so the
// YAML body parser applies to them only.
import type { FastifyInstance } from 'fastify';
import { AgentManifestInvalid, SCOPES, type AgentScope, type AgentService } from '../../agents/service.ts';
import { principalOf } from './auth-hook.ts';
import { deployInput, manifestErrors, viewerOf, type DeployBody, type DeployQuery } from './deploy-input.ts';
import { YAML_TYPES, type RequestOf } from './request-schemas.ts';

/** The manifest text and options of a deploy (deploy-input.ts), scoped to the agent scopes. */
function agentDeployInput(body: DeployBody, query: DeployQuery): { yaml: string; force: boolean; scope?: AgentScope } {
  return deployInput(body, query, SCOPES, 'body must be {"manifest_yaml": "...", "force"?: bool} or the YAML itself (Content-Type: application/yaml)');
}

export async function registerAgentRoutes(app: FastifyInstance, agents: AgentService): Promise<void> {
  await app.register(async (scope) => {
    scope.addContentTypeParser(YAML_TYPES, { parseAs: 'string' }, (_request, body, done) => done(null, body));

    scope.get('/v1/agents', async (request) => {
      const { tenant, viewer } = viewerOf(request);
      return { agents: await agents.list(tenant, viewer) };
    });

    scope.get<RequestOf<'GET /v1/agents/lookup/:name'>>('/v1/agents/lookup/:name', async (request) => {
      const { tenant, viewer } = viewerOf(request);
      return agents.lookup(tenant, request.params.name, viewer);
    });

    scope.post<RequestOf<'POST /v1/agents'>>('/v1/agents', async (request, reply) => {
      const p = principalOf(request);
      const input = agentDeployInput(request.body, request.query);
      return manifestErrors(reply, AgentManifestInvalid, async () => {
        const res = await agents.deploy({ tenant: p.tenantId, subject: p.subject, roles: p.roles, ...input });
        return reply.status(201).send({ agent_id: res.agent_id, name: res.name, version: res.version });
      });
    });

    scope.get<RequestOf<'GET /v1/agents/:id'>>('/v1/agents/:id', async (request) => {
      const { tenant, viewer } = viewerOf(request);
      return agents.get(tenant, request.params.id, viewer, request.query.version);
    });

    scope.put<RequestOf<'PUT /v1/agents/:id'>>('/v1/agents/:id', async (request, reply) => {
      const { tenant, viewer } = viewerOf(request);
      const input = agentDeployInput(request.body, request.query);
      return manifestErrors(reply, AgentManifestInvalid, async () => {
        const res = await agents.update(tenant, request.params.id, input.yaml, { ...viewer, force: input.force });
        return reply.status(200).send({ agent_id: res.agent_id, name: res.name, version: res.version, replaced: res.replaced });
      });
    });

    scope.delete<RequestOf<'DELETE /v1/agents/:id'>>('/v1/agents/:id', async (request) => {
      const { tenant, viewer } = viewerOf(request);
      return agents.remove(tenant, request.params.id, viewer, request.query.version);
    });

    scope.get<RequestOf<'GET /v1/agents/:id/versions'>>('/v1/agents/:id/versions', async (request) => {
      const { tenant, viewer } = viewerOf(request);
      return agents.versions(tenant, request.params.id, viewer);
    });
  });
}
