// Metrics of the process's database pools and Redis connections, read at scrape time from the clients themselves:
//   orch_db_pool_connections   {database, pool, state} gauge: state total|idle|waiting (pg.Pool's counts); pool main or
//                              generic_plans (src/storage/pg.ts: the step writer's lane)
//   orch_redis_connected       {client}            gauge: 1 while the connection is ready
//   orch_redis_reconnects_total {client}           counter: reconnect attempts (an outage shows as a climb)
// A client is tracked from open to close (the returned function stops it), so a closed pool leaves no series.
import { traceRedisCommands, type TraceableRedis } from './redis-spans.ts';
import type { Counter, ObservableGauge } from '@opentelemetry/api';
import { orchMeter } from './metrics.ts';

interface PoolLike {
  readonly totalCount: number;
  readonly idleCount: number;
  readonly waitingCount: number;
}

interface RedisLike extends Partial<TraceableRedis> {
  readonly status: string;
  on(event: 'reconnecting', listener: () => void): unknown;
  off(event: 'reconnecting', listener: () => void): unknown;
}

interface Instruments {
  pool: ObservableGauge;
  redisUp: ObservableGauge;
  reconnects: Counter;
}

const pools = new Map<PoolLike, { database: string; pool: string }>();
const redises = new Map<RedisLike, string>();
let instruments: Instruments | undefined;

function ensure(): Instruments {
  if (instruments) return instruments;
  const meter = orchMeter();
  const made: Instruments = {
    pool: meter.createObservableGauge('orch_db_pool_connections', { description: 'PostgreSQL pool connections by state (total, idle, waiting requests)' }),
    redisUp: meter.createObservableGauge('orch_redis_connected', { description: '1 while a Redis connection is ready' }),
    reconnects: meter.createCounter('orch_redis_reconnects', { description: 'Redis reconnect attempts' }),
  };
  made.pool.addCallback((result) => {
    for (const [p, labels] of pools) {
      result.observe(p.totalCount, { ...labels, state: 'total' });
      result.observe(p.idleCount, { ...labels, state: 'idle' });
      result.observe(p.waitingCount, { ...labels, state: 'waiting' });
    }
  });
  made.redisUp.addCallback((result) => {
    for (const [client, name] of redises) result.observe(client.status === 'ready' ? 1 : 0, { client: name });
  });
  instruments = made;
  return made;
}

/** The database name of a connection URL (never its credentials), for the `database` label. */
export function databaseLabel(url: string): string {
  try {
    return decodeURIComponent(new URL(url).pathname.replace(/^\//, '')) || 'default';
  } catch {
    return 'default';
  }
}

export function trackDbPool(pool: PoolLike, database: string, name = 'main'): () => void {
  ensure();
  pools.set(pool, { database, pool: name });
  return () => {
    pools.delete(pool);
  };
}

export function trackRedis(client: RedisLike, name: string): () => void {
  const { reconnects } = ensure();
  redises.set(client, name);
  const onReconnect = (): void => reconnects.add(1, { client: name });
  client.on('reconnecting', onReconnect);
  // Every orch connection is tracked here, so each also gets its command spans here (redis-spans.ts).
  const untrace = client.sendCommand && client.options ? traceRedisCommands(client as TraceableRedis, name) : undefined;
  return () => {
    untrace?.();
    redises.delete(client);
    client.off('reconnecting', onReconnect);
  };
}
