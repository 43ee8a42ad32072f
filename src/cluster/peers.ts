// Reading the membership: who is in the cluster, in what state, with what capabilities. Routing uses
// listActiveWorkers (docs/CLUSTER.md "Public API"); ListPeers and GET /v1/cluster/nodes use listPeers.
import type { Queryable } from '../storage/db.ts';
import { NodePeerStatus, NodeRole, type NodeCapabilityAdvertisement, type NodePeer } from '../gen/orch/cluster/v1/cluster.js';
import type { PeerStatus } from '../actors/node-peer/repo.ts';

export interface PeerRecord {
  node_id: string;
  role: 'controller' | 'worker' | 'hybrid';
  status: PeerStatus;
  grpc_address: string | null;
  tags: string[];
  capabilities: NodeCapabilityAdvertisement;
  load: Record<string, unknown> | null;
  last_heartbeat_at: Date | null;
  registered_at: Date | null;
  peer_id: string | null;
  drain_reason: string | null;
}

const COLUMNS = `node_id, role, status, grpc_address, tags, capabilities, load, last_heartbeat_at, registered_at, peer_id, drain_reason`;

interface Row {
  node_id: string;
  role: string | null;
  status: PeerStatus;
  grpc_address: string | null;
  tags: string[] | null;
  capabilities: Partial<NodeCapabilityAdvertisement> | null;
  load: Record<string, unknown> | null;
  last_heartbeat_at: Date | string | null;
  registered_at: Date | string | null;
  peer_id: string | null;
  drain_reason: string | null;
}

function date(v: Date | string | null): Date | null {
  return v === null ? null : v instanceof Date ? v : new Date(v);
}

export function capabilitiesOf(v: Partial<NodeCapabilityAdvertisement> | null | undefined, tags: string[] = []): NodeCapabilityAdvertisement {
  return {
    gpu_count: Number(v?.gpu_count ?? 0),
    vram_gb: Number(v?.vram_gb ?? 0),
    cpu_cores: Number(v?.cpu_cores ?? 0),
    available_memory_gb: Number(v?.available_memory_gb ?? 0),
    supported_runtimes: [...(v?.supported_runtimes ?? [])],
    tags: [...(v?.tags ?? tags)],
  };
}

function toRecord(r: Row): PeerRecord {
  const tags = r.tags ?? [];
  return {
    node_id: r.node_id,
    role: r.role === 'controller' || r.role === 'worker' ? r.role : 'hybrid',
    status: r.status,
    grpc_address: r.grpc_address,
    tags,
    capabilities: capabilitiesOf(r.capabilities, tags),
    load: r.load,
    last_heartbeat_at: date(r.last_heartbeat_at),
    registered_at: date(r.registered_at),
    peer_id: r.peer_id,
    drain_reason: r.drain_reason,
  };
}

export interface ListPeersFilter {
  /** One status; absent: every status but DEREGISTERED. */
  status?: PeerStatus;
  roles?: readonly ('controller' | 'worker' | 'hybrid')[];
}

export async function listPeers(db: Queryable, filter: ListPeersFilter = {}): Promise<PeerRecord[]> {
  const where: string[] = [];
  const params: unknown[] = [];
  if (filter.status) {
    params.push(filter.status);
    where.push(`status = $${params.length}`);
  } else {
    where.push(`status <> 'DEREGISTERED'`);
  }
  if (filter.roles) {
    params.push(filter.roles);
    where.push(`role = ANY($${params.length}::TEXT[])`);
  }
  const res = await db.query<Row>(`SELECT ${COLUMNS} FROM cluster_nodes WHERE ${where.join(' AND ')} ORDER BY node_id`, params);
  return res.rows.map(toRecord);
}

/** Whether `caps` meets the minimum `required`: every tag and runtime present, every amount at least as large. */
export function meetsRequirement(caps: NodeCapabilityAdvertisement, required?: Partial<NodeCapabilityAdvertisement>): boolean {
  if (!required) return true;
  if ((required.gpu_count ?? 0) > caps.gpu_count) return false;
  if ((required.vram_gb ?? 0) > caps.vram_gb) return false;
  if ((required.cpu_cores ?? 0) > caps.cpu_cores) return false;
  if ((required.available_memory_gb ?? 0) > caps.available_memory_gb) return false;
  for (const t of required.tags ?? []) if (!caps.tags.includes(t)) return false;
  for (const r of required.supported_runtimes ?? []) if (!caps.supported_runtimes.includes(r)) return false;
  return true;
}

/** ACTIVE members that run work (role worker or hybrid) and meet `required`, by node id. */
export async function listActiveWorkers(db: Queryable, required?: Partial<NodeCapabilityAdvertisement>): Promise<PeerRecord[]> {
  const peers = await listPeers(db, { status: 'ACTIVE', roles: ['worker', 'hybrid'] });
  return peers.filter((p) => meetsRequirement(p.capabilities, required));
}

const ROLE: Record<PeerRecord['role'], NodeRole> = { controller: NodeRole.CONTROLLER, worker: NodeRole.WORKER, hybrid: NodeRole.HYBRID };
const STATUS: Record<string, NodePeerStatus> = { ACTIVE: NodePeerStatus.ACTIVE, DRAINING: NodePeerStatus.DRAINING, UNHEALTHY: NodePeerStatus.UNHEALTHY };

export function peerStatusFromProto(s: NodePeerStatus): PeerStatus {
  return s === NodePeerStatus.DRAINING ? 'DRAINING' : s === NodePeerStatus.UNHEALTHY ? 'UNHEALTHY' : 'ACTIVE';
}

export function toNodePeer(p: PeerRecord): NodePeer {
  return {
    node_id: p.node_id,
    role: ROLE[p.role],
    capabilities: p.capabilities,
    last_heartbeat_at: p.last_heartbeat_at?.toISOString() ?? '',
    // DEREGISTERED has no proto value; ListPeers never answers such rows.
    status: STATUS[p.status] ?? NodePeerStatus.UNHEALTHY,
    grpc_address: p.grpc_address ?? '',
  };
}
