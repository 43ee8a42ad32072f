// The cluster capability's service object, shared by HTTP, gRPC and the CLI. This issue gives it the read side;
// membership (AttestNode … DeregisterNode), drains and routing come with the cluster issue.
import type { Db } from '../storage/db.ts';
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
  };
}

export class ClusterService {
  constructor(private readonly db: Db) {}

  async listNodes(status?: PeerStatus): Promise<NodeView[]> {
    return (await listNodes(this.db, status)).map(toNodeView);
  }
}
