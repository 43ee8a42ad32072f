// The load a node reports with each heartbeat (`orch node ls` LOAD, `drained` of a DRAINING node): its pending and
// running executions, the machine's CPU use since the last sample and its memory use. One sampler for a worker's
// heartbeat to its controller (capability.ts) and a controller's or hybrid's own row (node-peer actor), so every
// row of cluster_nodes carries the same shape. The heartbeat builders are synchronous: the sampler answers the
// last reading and starts the next one.
import os from 'node:os';
import { monitorEventLoopDelay } from 'node:perf_hooks';
import type { Logger } from '../logging/logger.ts';
import type { Queryable } from '../storage/db.ts';
import type { WorkerLoad } from './worker-membership.ts';

/** CPU use of the whole machine between two calls, in percent. */
export function cpuSampler(): () => number {
  const total = (): { idle: number; all: number } => {
    let idle = 0;
    let all = 0;
    for (const c of os.cpus()) {
      idle += c.times.idle;
      all += c.times.idle + c.times.user + c.times.sys + c.times.nice + c.times.irq;
    }
    return { idle, all };
  };
  let last = total();
  return () => {
    const now = total();
    const all = now.all - last.all;
    const busy = all - (now.idle - last.idle);
    last = now;
    return all > 0 ? Math.round((busy / all) * 1000) / 10 : 0;
  };
}

/** The event loop's delay, 99th percentile since the previous call, in ms (one decimal); a 50 ms resolution timer. */
export function eventLoopSampler(): () => number {
  // 50 ms: each tick wakes an idle node's loop (issue 18); a heartbeat reports delays far longer than that.
  const h = monitorEventLoopDelay({ resolution: 50 });
  h.enable();
  return () => {
    const p99 = h.count > 0 ? h.percentile(99) / 1e6 : 0;
    h.reset();
    return Math.round(p99 * 10) / 10;
  };
}

/**
 * A synchronous view of this node's load: the latest sample, a new one started on every call. `db` absent: the
 * executions are not counted here (0) because the statement that writes the load counts them (a controller's or
 * hybrid's own heartbeat, node-peer/repo.ts heartbeatSelf).
 */
export function nodeLoadSampler(db: Queryable | undefined, nodeId: string, logger: Logger): () => WorkerLoad {
  const cpu = cpuSampler();
  const loop = eventLoopSampler();
  const sample = async (): Promise<WorkerLoad> => {
    const delay = loop();
    const res = db ? await db.query<{ n: string }>(`SELECT count(*)::TEXT AS n FROM executions WHERE owner_node = $1 AND status IN ('pending', 'running')`, [nodeId]) : undefined;
    return {
      active_execution_count: Number(res?.rows[0]?.n ?? 0),
      cpu_utilization_percent: cpu(),
      memory_utilization_percent: Math.round((1 - os.freemem() / os.totalmem()) * 1000) / 10,
      event_loop_delay_ms: delay,
    };
  };
  let last: WorkerLoad = { active_execution_count: 0, cpu_utilization_percent: 0, memory_utilization_percent: 0 };
  const refresh = (): void => {
    sample().then((l) => (last = l)).catch((err: unknown) => logger.debug({ err }, 'load sample failed'));
  };
  refresh();
  return () => {
    refresh();
    return last;
  };
}
