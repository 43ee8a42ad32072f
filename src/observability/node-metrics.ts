// Cluster gauges read from cluster_nodes at scrape time (the table is the truth for membership, heartbeats and
// status; the cluster has no tenants): orch_cluster_nodes{status}, orch_cluster_node_up{node,role,status},
// orch_node_heartbeats_total{node} and orch_node_heartbeat_age_seconds{node}. A node registers this at start and
// removes it at stop. DEREGISTERED nodes are counted by status but not listed one by one.
import type { Queryable } from '../storage/db.ts';
import { orchMetrics } from './metrics.ts';

interface NodeRowLite {
  node_id: string;
  role: string | null;
  status: string;
  heartbeats: number;
  last_heartbeat_at: Date | string | null;
}

const STATUSES = ['ACTIVE', 'DRAINING', 'UNHEALTHY', 'DEREGISTERED'];

export function observeClusterNodes(db: Queryable): () => void {
  const m = orchMetrics();
  return m.observeBatch(
    async (result) => {
      const rows = (await db.query<NodeRowLite>('SELECT node_id, role, status, heartbeat_count AS heartbeats, last_heartbeat_at FROM cluster_nodes')).rows;
      const byStatus = new Map<string, number>(STATUSES.map((s) => [s, 0]));
      const now = Date.now();
      for (const r of rows) {
        byStatus.set(r.status, (byStatus.get(r.status) ?? 0) + 1);
        if (r.status === 'DEREGISTERED') continue;
        result.observe(m.clusterNodeUp, 1, { node: r.node_id, role: r.role ?? '', status: r.status });
        result.observe(m.heartbeats, Number(r.heartbeats), { node: r.node_id });
        if (r.last_heartbeat_at) result.observe(m.heartbeatAge, Math.max(0, (now - new Date(r.last_heartbeat_at).getTime()) / 1000), { node: r.node_id });
      }
      for (const [status, n] of byStatus) result.observe(m.clusterNodes, n, { status });
    },
    [m.clusterNodes, m.clusterNodeUp, m.heartbeats, m.heartbeatAge],
  );
}
