// Human approvals over HTTP (seed 000 "Human approvals"), with the seed's exact error bodies. All of it is
// ApprovalService; this file only translates.
import type { FastifyInstance } from 'fastify';
import type { ApprovalService } from '../../workflow/approvals/service.ts';
import { principalOf } from './auth-hook.ts';
import type { RequestOf } from './request-schemas.ts';

export function registerApprovalRoutes(app: FastifyInstance, approvals: ApprovalService): void {
  app.get('/v1/human-approvals', async (request) => approvals.list(principalOf(request).tenantId));

  app.get<RequestOf<'GET /v1/human-approvals/:id'>>('/v1/human-approvals/:id', async (request) => approvals.get(principalOf(request).tenantId, request.params.id));

  app.post<RequestOf<'POST /v1/human-approvals/:id/approve'>>('/v1/human-approvals/:id/approve', async (request) => {
    const p = principalOf(request);
    const body = request.body ?? {};
    return approvals.approve(p.tenantId, request.params.id, { feedback: body.feedback, approved_by: body.approved_by ?? p.subject });
  });

  app.post<RequestOf<'POST /v1/human-approvals/:id/reject'>>('/v1/human-approvals/:id/reject', async (request) => {
    const p = principalOf(request);
    const body = request.body;
    return approvals.reject(p.tenantId, request.params.id, { reason: body.reason, rejected_by: body.rejected_by ?? p.subject });
  });
}
