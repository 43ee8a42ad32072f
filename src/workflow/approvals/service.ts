// ApprovalService: human approval requests (seed 000 "Human approvals") over the approvals rows that Human states
// write. approve/reject resolve a pending request with a guarded UPDATE (so a timeout or a second answer cannot
// resolve it twice) and wake the waiting run (on whichever node holds it: docs/CLUSTER.md "Messages to actors"), which follows input_equals_yes (approve) or input_equals_no (reject).
import { Errors, OrchError } from '../../errors/catalog.ts';
import type { Db } from '../../storage/db.ts';
import { isUuid } from '../engine/ids.ts';
import type { Teller } from '../../actors/tell.ts';
import { getTenantApproval, listPendingApprovals, resolveApproval, type ApprovalRow } from './repo.ts';

export const NOT_FOUND_OR_COMPLETED = 'Request not found or already completed';

export interface ApprovalRequestView {
  id: string;
  execution_id: string;
  state_name: string;
  prompt: string;
  created_at: string;
  timeout_seconds: number | null;
  deadline: string | null;
  default_response: string | null;
}

function view(r: ApprovalRow): ApprovalRequestView {
  return {
    id: r.id,
    execution_id: r.workflow_execution_id,
    state_name: r.state_name,
    prompt: r.prompt,
    created_at: r.created_at.toISOString(),
    timeout_seconds: r.timeout_seconds,
    deadline: r.deadline?.toISOString() ?? null,
    default_response: r.default_response,
  };
}

function checkId(id: string): void {
  if (!isUuid(id)) throw new OrchError(Errors.BAD_REQUEST, 'Invalid request ID');
}

export class ApprovalService {
  constructor(
    private readonly db: Db,
    /** Wakes the waiting run wherever its lease is held (ActorPost), once the answer is committed. */
    private readonly teller: Teller,
  ) {}

  async list(tenant: string): Promise<{ pending_requests: ApprovalRequestView[] }> {
    return { pending_requests: (await listPendingApprovals(this.db, tenant)).map(view) };
  }

  /** The pending request, or the seed's 200 body naming it not found or completed. */
  async get(tenant: string, id: string): Promise<{ request: ApprovalRequestView } | { error: string }> {
    checkId(id);
    const row = await getTenantApproval(this.db, tenant, id);
    if (!row || row.status !== 'pending') return { error: NOT_FOUND_OR_COMPLETED };
    return { request: view(row) };
  }

  async approve(tenant: string, id: string, body: { feedback?: unknown; approved_by?: unknown }): Promise<{ status: 'approved'; id: string; execution_id: string }> {
    checkId(id);
    if (body.feedback !== undefined && body.feedback !== null && typeof body.feedback !== 'string') throw new OrchError(Errors.BAD_REQUEST, 'feedback must be a string');
    const row = await this.resolve(tenant, id, {
      status: 'approved',
      response: 'approved',
      feedback: typeof body.feedback === 'string' ? body.feedback : null,
      resolvedBy: typeof body.approved_by === 'string' ? body.approved_by : undefined,
    });
    return { status: 'approved', id, execution_id: row.workflow_execution_id };
  }

  async reject(tenant: string, id: string, body: { reason?: unknown; rejected_by?: unknown }): Promise<{ status: 'rejected'; id: string; execution_id: string }> {
    checkId(id);
    if (typeof body.reason !== 'string' || body.reason.trim() === '') throw new OrchError(Errors.BAD_REQUEST, 'reason is required');
    const row = await this.resolve(tenant, id, {
      status: 'rejected',
      response: 'rejected',
      feedback: body.reason,
      resolvedBy: typeof body.rejected_by === 'string' ? body.rejected_by : undefined,
    });
    return { status: 'rejected', id, execution_id: row.workflow_execution_id };
  }

  private async resolve(tenant: string, id: string, r: Parameters<typeof resolveApproval>[2]): Promise<ApprovalRow> {
    const row = await resolveApproval(this.db, id, r, { tenantId: tenant, withHolder: true });
    if (!row) throw new OrchError(Errors.NOT_FOUND, NOT_FOUND_OR_COMPLETED);
    // never-rejects: Teller.tell answers an outcome; the committed answer is read by the run however it is woken.
    void this.teller.tell('workflow', row.workflow_execution_id, { type: 'wake' }, row.holder);
    return row;
  }
}
