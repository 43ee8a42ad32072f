// GET /v1/whoami: the identity a request resolves to (subject, roles, tenant after delegation). Lets operators
// check a token and its X-Tenant-Id handling without guessing.
import type { FastifyInstance } from 'fastify';
import { principalOf } from './auth-hook.ts';

export function registerIdentityRoutes(app: FastifyInstance): void {
  app.get('/v1/whoami', async (request) => {
    const p = principalOf(request);
    return {
      subject: p.subject,
      username: p.username ?? null,
      roles: p.roles,
      tenant_id: p.tenantId,
      home_tenant_id: p.homeTenantId,
      service_account: p.isServiceAccount,
      delegated: p.delegated,
    };
  });
}
