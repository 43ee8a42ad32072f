// What the HTTP rate limits cost a request (issue 19): GET /v1/whoami (RS256 JWT verified per request) on three
// real `orch up` processes that differ only in spec.rate_limits — off; on, counted in memory; on, counted in Redis —
// with nothing exempt, so every request is counted twice (per address before auth, per tenant after it) and none
// is refused (the limits are far above the load). Runs alternate between the nodes so load drifts hit all three.
// Run: `npm run bench -- rate-limit [--seconds 5] [--runs 3]`.
import autocannon from 'autocannon';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { startOrchNode, type NodeProcess } from '../test/support/node-process.ts';

export type RateLimitVariant = 'off' | 'memory' | 'redis';

export interface RateLimitFigures {
  variant: RateLimitVariant;
  reqPerSecond: number[];
}

const LIMITS = (enabled: boolean): string => `  rate_limits:
    enabled: ${enabled}
    per_ip: { max: 100000000, window_seconds: 60 }
    per_tenant: { max: 100000000, window_seconds: 60 }
    exempt_ips: []
    exempt_tenants: []
`;

export async function benchRateLimit(runs: number, seconds: number, redisUrl: string, log: (line: string) => void): Promise<RateLimitFigures[]> {
  const dir = await mkdtemp(path.join(os.tmpdir(), 'orch-bench-rl-'));
  const nodes: Array<{ variant: RateLimitVariant; node: NodeProcess }> = [];
  try {
    for (const variant of ['off', 'memory', 'redis'] as const) {
      const config = path.join(dir, `${variant}.yaml`);
      await writeFile(config, `apiVersion: orch.dev/v1\nkind: NodeConfig\nmetadata: { name: rl-${variant} }\nspec:\n  node: { id: rl-${variant} }\n${LIMITS(variant !== 'off')}`);
      const node = await startOrchNode({ ORCH_CONFIG: config, ORCH_DATA_DIR: path.join(dir, variant), ORCH_LOG_LEVEL: 'warn', DATABASE_URL: undefined, REDIS_URL: variant === 'redis' ? redisUrl : undefined });
      nodes.push({ variant, node });
    }
    const figures = nodes.map(({ variant }) => ({ variant, reqPerSecond: [] as number[] }));
    const load = async (node: NodeProcess, duration: number): Promise<number> => {
      const r = await autocannon({ url: `${node.banner.http}/v1/whoami`, connections: 50, pipelining: 1, duration, headers: { authorization: `Bearer ${node.banner.dev_token ?? ''}` } });
      if (r.non2xx > 0 || r.errors > 0) throw new Error(`${node.banner.node_id}: ${r.non2xx} non-2xx, ${r.errors} errors`);
      return r.requests.average;
    };
    for (const { node } of nodes) await load(node, 2); // warm-up
    for (let i = 0; i < runs; i++) {
      for (const [j, { node, variant }] of nodes.entries()) {
        const rps = await load(node, seconds);
        figures[j]!.reqPerSecond.push(rps);
        log(`  run ${i + 1} ${variant}: ${Math.round(rps)} req/s`);
      }
    }
    return figures;
  } finally {
    await Promise.all(nodes.map(({ node }) => node.kill('SIGTERM')));
    await rm(dir, { recursive: true, force: true });
  }
}

/**
 * The limits' own cost, in process (less exposed to the machine's load than a throughput figure): fastify apps that
 * differ only in the limits answer `inject`ed requests to a trivial route, rounds alternating between them; CPU time
 * (process.cpuUsage) and wall time per request. Each request is counted by per_ip and per_webhook_source (two
 * counters, as an authenticated /v1 request is counted by per_ip and per_tenant). Redis: the shared one.
 */
export async function benchRateLimitInProcess(rounds: number, perRound: number, redisUrl: string): Promise<Array<{ variant: RateLimitVariant; cpuUs: number[]; wallUs: number[] }>> {
  const [{ default: Fastify }, { installRateLimits }, { silentLogger }] = await Promise.all([import('fastify'), import('../src/gateway/http/rate-limit.ts'), import('../src/logging/logger.ts')]);
  const big = { max: 100_000_000, window_seconds: 60 };
  const make = async (variant: RateLimitVariant) => {
    const app = Fastify();
    const config = { enabled: variant !== 'off', per_ip: big, per_tenant: big, per_webhook_source: big, exempt_ips: [], exempt_tenants: [] };
    const l = await installRateLimits(app, { config, logger: silentLogger(), ...(variant === 'redis' ? { redisUrl } : {}) });
    l.afterAuth();
    app.post('/v1/webhooks/:source', async () => ({ ok: true }));
    await app.ready();
    return { variant, app };
  };
  const apps = [await make('off'), await make('memory'), await make('redis')];
  const out = apps.map(({ variant }) => ({ variant, cpuUs: [] as number[], wallUs: [] as number[] }));
  try {
    const source = `bench-${process.pid}`;
    for (let r = 0; r < rounds + 1; r++) {
      for (const [i, { app }] of apps.entries()) {
        const cpu0 = process.cpuUsage();
        const t0 = performance.now();
        for (let n = 0; n < perRound; n++) {
          const res = await app.inject({ method: 'POST', url: `/v1/webhooks/${source}`, payload: {}, remoteAddress: '10.9.8.7' });
          if (res.statusCode !== 200) throw new Error(`status ${res.statusCode}`);
        }
        const cpu = process.cpuUsage(cpu0);
        if (r === 0) continue; // warm-up round
        out[i]!.cpuUs.push((cpu.user + cpu.system) / perRound);
        out[i]!.wallUs.push(((performance.now() - t0) * 1000) / perRound);
      }
    }
    return out;
  } finally {
    await Promise.all(apps.map(({ app }) => app.close()));
  }
}
