// RouteExecution (seed 000; docs/ROUTING.md): round-robin among the ACTIVE workers whose capabilities meet the
// request. The candidates come from cluster_nodes (peers.ts listActiveWorkers: status ACTIVE, role worker or hybrid,
// tags and capabilities met); a DRAINING, UNHEALTHY or DEREGISTERED member is never chosen. The rotation is by node
// id: after node X the next choice is the first candidate whose id sorts after X (wrapping), so members joining or
// leaving never make the rotation skip or repeat one that stays.
import { Errors, OrchError } from '../errors/catalog.ts';
import type { NodeCapabilityAdvertisement } from '../gen/orch/cluster/v1/cluster.js';
import type { Queryable } from '../storage/db.ts';
import type { AgentManifest } from '../agents/manifest/types.ts';
import { listActiveWorkers, meetsRequirement, type PeerRecord } from './peers.ts';

export interface RouteDecision {
  nodeId: string;
  grpcAddress: string;
}

/** Labels of an agent manifest that ask for worker capabilities (docs/ROUTING.md). */
export const NODE_TAGS_LABEL = 'orch.dev/node-tags';
export const GPU_COUNT_LABEL = 'orch.dev/gpu-count';

/**
 * The minimum capabilities an execution of `manifest` needs: the tags in `metadata.labels["orch.dev/node-tags"]`
 * (comma separated), a GPU count from `orch.dev/gpu-count`, and `docker` among the runtimes when the agent runs in
 * a container.
 */
export function requirementsOf(manifest: AgentManifest): Partial<NodeCapabilityAdvertisement> {
  const labels = manifest.metadata.labels ?? {};
  const tags = (labels[NODE_TAGS_LABEL] ?? '')
    .split(',')
    .map((t) => t.trim())
    .filter((t) => t.length > 0);
  const gpus = Number(labels[GPU_COUNT_LABEL] ?? 0);
  const req: Partial<NodeCapabilityAdvertisement> = {};
  if (tags.length > 0) req.tags = tags;
  if (Number.isInteger(gpus) && gpus > 0) req.gpu_count = gpus;
  if (manifest.spec.runtime.isolation === 'docker') req.supported_runtimes = ['docker'];
  return req;
}

function describe(required: Partial<NodeCapabilityAdvertisement> | undefined): string {
  if (!required) return 'any';
  const parts: string[] = [];
  if (required.tags?.length) parts.push(`tags [${required.tags.join(', ')}]`);
  if (required.supported_runtimes?.length) parts.push(`runtimes [${required.supported_runtimes.join(', ')}]`);
  for (const k of ['gpu_count', 'vram_gb', 'cpu_cores', 'available_memory_gb'] as const) if (required[k]) parts.push(`${k} >= ${required[k]}`);
  return parts.join(', ') || 'any';
}

export class ExecutionRouter {
  private last: string | undefined;
  private view: { at: number; peers: Promise<PeerRecord[]> } | undefined;

  constructor(
    private readonly db: Queryable,
    /** The node making the decisions; never routed to itself (a controller runs no executions). */
    private readonly selfId?: string,
    /**
     * How long one read of the membership serves decisions (default 250 ms). A member that left within that time
     * may still be chosen once; its ForwardExecution then fails and the execution is routed again.
     */
    private readonly viewTtlMs = 250,
  ) {}

  /**
   * Forget the cached membership: the next decision reads it again. Called on every member status change this node
   * hears of (the `node:` streams of the bus, from any controller) and right after this node's own drain, so a
   * drained member is never chosen after the drain was answered.
   */
  invalidate(): void {
    this.view = undefined;
  }

  /** The ACTIVE members that run work, read at most once per viewTtlMs. */
  private active(): Promise<PeerRecord[]> {
    const now = Date.now();
    if (!this.view || now - this.view.at > this.viewTtlMs) {
      const peers = listActiveWorkers(this.db);
      this.view = { at: now, peers };
      peers.catch(() => (this.view = undefined));
    }
    return this.view.peers;
  }

  /** Members that could take an execution with `required` now, by node id. */
  async candidates(required?: Partial<NodeCapabilityAdvertisement>, exclude: readonly string[] = []): Promise<PeerRecord[]> {
    const peers = await this.active();
    return peers.filter((p) => p.grpc_address && p.node_id !== this.selfId && !exclude.includes(p.node_id) && meetsRequirement(p.capabilities, required));
  }

  /** Picks the next candidate in the rotation; FAILED_PRECONDITION when none meets the request. */
  async route(required?: Partial<NodeCapabilityAdvertisement>, exclude: readonly string[] = []): Promise<RouteDecision> {
    return this.pick(await this.candidates(required, exclude), required);
  }

  /** The rotation step alone (the bench measures it apart from the query). */
  pick(candidates: readonly PeerRecord[], required?: Partial<NodeCapabilityAdvertisement>): RouteDecision {
    if (candidates.length === 0) throw new OrchError(Errors.UNAVAILABLE, `no ACTIVE worker meets the request (${describe(required)})`);
    const last = this.last;
    const next = (last === undefined ? undefined : candidates.find((c) => c.node_id > last)) ?? candidates[0]!;
    this.last = next.node_id;
    return { nodeId: next.node_id, grpcAddress: next.grpc_address ?? '' };
  }
}
