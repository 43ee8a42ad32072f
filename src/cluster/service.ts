// The cluster capability's service object behind HTTP and the CLI: the members with status and load, and the
// operator's drain and undrain (docs/CLUSTER.md). Membership itself (AttestNode … DeregisterNode) is src/cluster/membership.ts.
import type { Db } from '../storage/db.ts';
import { Errors, OrchError } from '../errors/catalog.ts';
import type { Membership } from './membership.ts';
import { listNodes, type NodeRow, type PeerStatus } from '../actors/node-peer/repo.ts';

export interface NodeView {
  node_id: string;
  role: string;
  status: PeerStatus;
  grpc_address: string | null;
  tags: string[];
  load: Record<string, unknown> | null;
  heartbeat_count: number;
  registered_at: string | null;
  last_heartbeat_at: string | null;
  owner_node: string | null;
  /** DRAINING and its last heartbeat reported no execution left. */
  drained: boolean;
}

function iso(d: Date | string | null): string | null {
  if (d === null) return null;
  return (d instanceof Date ? d : new Date(d)).toISOString();
}

export function toNodeView(row: NodeRow): NodeView {
  return {
    node_id: row.node_id,
    role: row.role,
    status: row.status,
    grpc_address: row.grpc_address,
    tags: row.tags ?? [],
    load: row.load,
    heartbeat_count: Number(row.heartbeat_count),
    registered_at: iso(row.registered_at),
    last_heartbeat_at: iso(row.last_heartbeat_at),
    owner_node: row.owner_node,
    drained: row.status === 'DRAINING' && Number(row.load?.active_execution_count ?? -1) === 0,
  };
}

export class ClusterService {
  /** `membership` on controllers (and hybrids): without it drain answers 501. */
  constructor(
    private readonly db: Db,
    private readonly membership?: Membership,
    /** Told after a drain is written (the router forgets its cached membership). */
    private readonly onMembershipChanged: () => void = () => {},
  ) {}

  /** Operator drain: DRAINING now, the drain command on the member's next heartbeat response. */
  async drain(nodeId: string, reason?: string): Promise<{ node_id: string; status: string; already_draining: boolean }> {
    if (!this.membership) throw new OrchError(Errors.NOT_IMPLEMENTED, 'drain is served by controller nodes');
    const r = await this.membership.drain(nodeId, reason && reason.trim() ? reason.trim() : 'operator request');
    this.onMembershipChanged();
    return { node_id: r.node_id, status: r.status, already_draining: r.already };
  }

  /** Operator undrain: ACTIVE again, the undrain command on the member's next heartbeat response. */
  async undrain(nodeId: string, reason?: string): Promise<{ node_id: string; status: string; already_active: boolean }> {
    if (!this.membership) throw new OrchError(Errors.NOT_IMPLEMENTED, 'undrain is served by controller nodes');
    const r = await this.membership.undrain(nodeId, reason && reason.trim() ? reason.trim() : 'operator request');
    this.onMembershipChanged();
    return { node_id: r.node_id, status: r.status, already_active: r.already };
  }

  async listNodes(status?: PeerStatus): Promise<NodeView[]> {
    return (await listNodes(this.db, status)).map(toNodeView);
  }
}
