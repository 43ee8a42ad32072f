// Admission control for execution starts (issue 24). A start costs the node real work (a sandbox: fork/exec of
// bubblewrap, its namespaces, volumes); a thousand of them at once used to pile onto the event loop together, so that
// POST /v1/executions answered after 16 s and /health stalled. Now:
//   - POST /v1/executions writes the row and answers at once; the execution takes a place in this node's start queue
//     (`reserve`), or is refused when the queue is full: 429 when the caller's tenant holds its share
//     (max_queued_per_tenant), 503 when the node's whole queue is full (max_queued), both with Retry-After;
//   - the execution's actor waits for a start slot (`acquire`) before it makes its sandbox: at most
//     max_concurrent_starts sandboxes are being made at once, and slots go round-robin over the tenants that wait
//     (one tenant's thousand starts do not delay another tenant's one by a thousand starts);
//   - a slot is given back once the sandbox is up (or failed): waiting on models is not bounded here.
// Executions recovered from their rows (a restart, a takeover) queue too, without counting against the bound: they
// were admitted once already.
import { Errors, OrchError } from '../../errors/catalog.ts';

export interface AdmissionConfig {
  /** Sandboxes being made at once. */
  max_concurrent_starts: number;
  /** Executions admitted on this node whose sandbox is not made yet (waiting or being made). */
  max_queued: number;
  /** The same, per tenant. */
  max_queued_per_tenant: number;
  /** Retry-After of a refusal. */
  retry_after_seconds: number;
}

export const DEFAULT_ADMISSION: AdmissionConfig = { max_concurrent_starts: 4, max_queued: 2000, max_queued_per_tenant: 1000, retry_after_seconds: 2 };

interface Waiter {
  id: string;
  tenant: string;
  grant: () => void;
}

export interface AdmissionLoad {
  /** Admitted, sandbox not made yet (waiting + starting). */
  queued: number;
  /** Sandboxes being made now. */
  starting: number;
  max_queued: number;
  max_concurrent_starts: number;
  /** The queue is full: new starts are refused. */
  saturated: boolean;
}

export class StartAdmission {
  /** Admitted executions (by id) whose sandbox is not made yet, with their tenant. */
  private readonly admitted = new Map<string, string>();
  private readonly perTenant = new Map<string, number>();
  /** Tenants with waiters, in round-robin order; each tenant's waiters in arrival order. */
  private readonly waiting = new Map<string, Waiter[]>();
  private readonly inFlight = new Set<string>();

  constructor(readonly config: AdmissionConfig = DEFAULT_ADMISSION) {}

  /** Takes a place in the queue for a new execution, or throws 429 (tenant share) / 503 (node full). */
  reserve(tenant: string, executionId: string): void {
    if (this.admitted.has(executionId)) return;
    const retry = { retry_after_seconds: this.config.retry_after_seconds };
    if ((this.perTenant.get(tenant) ?? 0) >= this.config.max_queued_per_tenant) {
      throw new OrchError(Errors.RATE_LIMITED, `too many executions of this tenant waiting to start on this node (${this.config.max_queued_per_tenant}); retry later`, {
        details: { ...retry, queued_for_tenant: this.perTenant.get(tenant) ?? 0 },
      });
    }
    if (this.admitted.size >= this.config.max_queued) {
      throw new OrchError(Errors.UNAVAILABLE, `the node's execution start queue is full (${this.config.max_queued}); retry later`, {
        details: { ...retry, queued: this.admitted.size },
      });
    }
    this.add(tenant, executionId);
  }

  private add(tenant: string, id: string): void {
    this.admitted.set(id, tenant);
    this.perTenant.set(tenant, (this.perTenant.get(tenant) ?? 0) + 1);
  }

  /** The execution leaves the queue (its sandbox is made, it failed, or its row was never written). Idempotent. */
  release(executionId: string): void {
    const tenant = this.admitted.get(executionId);
    if (tenant === undefined) return;
    this.admitted.delete(executionId);
    const n = (this.perTenant.get(tenant) ?? 1) - 1;
    if (n <= 0) this.perTenant.delete(tenant);
    else this.perTenant.set(tenant, n);
    const list = this.waiting.get(tenant);
    const i = list?.findIndex((w) => w.id === executionId) ?? -1;
    if (list && i >= 0) {
      list.splice(i, 1);
      if (list.length === 0) this.waiting.delete(tenant);
    }
    if (this.inFlight.delete(executionId)) this.pump();
  }

  /**
   * Resolves once this execution may make its sandbox (call `release` when it is made or failed); rejects with the
   * signal's reason when it aborts first. An execution that was not reserved (recovered from its row) joins the
   * queue here.
   */
  acquire(tenant: string, executionId: string, signal: AbortSignal): Promise<void> {
    if (!this.admitted.has(executionId)) this.add(tenant, executionId);
    if (this.inFlight.has(executionId)) return Promise.resolve();
    return new Promise<void>((resolve, reject) => {
      if (signal.aborted) {
        this.release(executionId);
        return reject(signal.reason);
      }
      const onAbort = (): void => {
        this.release(executionId);
        reject(signal.reason);
      };
      signal.addEventListener('abort', onAbort, { once: true });
      const w: Waiter = {
        id: executionId,
        tenant,
        grant: () => {
          signal.removeEventListener('abort', onAbort);
          resolve();
        },
      };
      const list = this.waiting.get(tenant);
      if (list) list.push(w);
      else this.waiting.set(tenant, [w]);
      this.pump();
    });
  }

  /** Grants free slots, one tenant at a time in turn. */
  private pump(): void {
    while (this.inFlight.size < this.config.max_concurrent_starts && this.waiting.size > 0) {
      const [tenant, list] = this.waiting.entries().next().value as [string, Waiter[]];
      const w = list.shift()!;
      // The tenant goes to the back of the round.
      this.waiting.delete(tenant);
      if (list.length > 0) this.waiting.set(tenant, list);
      this.inFlight.add(w.id);
      w.grant();
    }
  }

  load(): AdmissionLoad {
    return {
      queued: this.admitted.size,
      starting: this.inFlight.size,
      max_queued: this.config.max_queued,
      max_concurrent_starts: this.config.max_concurrent_starts,
      saturated: this.admitted.size >= this.config.max_queued,
    };
  }
}
