// HTTP rate limits (issue 19; docs/CONFIG.md "Rate limits"), counted by @fastify/rate-limit's stores: in Redis when
// the node has one (one counter per key for the whole cluster: a tenant's limit holds across nodes), else in
// memory per node. Three limits, each a fixed window:
//   per_ip              every request of one client address, before authentication (so a flood of bad tokens is
//                       cut before any JWT work); health probes and /metrics are not counted
//   per_tenant          authenticated /v1 requests of one tenant (after the auth hook)
//   per_webhook_source  POST /v1/webhooks/{source}, per source
// Over a limit: 429 in the usual error body, with Retry-After (seconds to the window's end) and X-RateLimit-*.
// The plugin's own per-route hooks are not used: they let only the first limiter of a request run.
// When Redis cannot answer, a request is let through (skipOnError): a limit protects capacity, and refusing every
// request during a Redis outage would be worse than not counting for a while.
import rateLimit from '@fastify/rate-limit';
import type { FastifyInstance, FastifyRequest, FastifyReply } from 'fastify';
import { Redis } from 'ioredis';
import type { RateLimit, RateLimitsConfig } from '../../config/types.ts';
import { Errors, OrchError } from '../../errors/catalog.ts';
import type { Logger } from '../../logging/logger.ts';
import { trackRedis } from '../../observability/clients.ts';
import { orchMetrics } from '../../observability/metrics.ts';

type Check = (req: FastifyRequest) => Promise<{ isAllowed: boolean; isExceeded?: boolean; max?: number; remaining?: number; ttlInSeconds?: number }>;

declare module 'fastify' {
  interface FastifyInstance {
    createRateLimit(options: { max: number; timeWindow: number; keyGenerator: (req: FastifyRequest) => string; allowList?: (req: FastifyRequest, key: string) => boolean }): Check;
  }
}

const UNCOUNTED = new Set(['/health', '/health/live', '/health/ready', '/metrics']);

function pathOf(request: FastifyRequest): string {
  return request.url.split('?')[0] ?? '';
}

export interface RateLimitDeps {
  config: RateLimitsConfig;
  /** Redis for counters shared by the cluster; absent: per node, in memory. */
  redisUrl?: string;
  logger: Logger;
}

/**
 * Registers the limits. Call twice: `before: true` before the auth hook (per IP), then after it (tenant, webhook
 * source). Answers a function that closes the Redis connection, if one was made.
 */
export async function installRateLimits(app: FastifyInstance, deps: RateLimitDeps): Promise<{ afterAuth(): void }> {
  const { config } = deps;
  if (!config.enabled) return { afterAuth: () => undefined };
  let redis: Redis | undefined;
  if (deps.redisUrl) {
    // No offline queue and one attempt: while Redis is away a check fails at once (and the request passes)
    // instead of waiting in a queue.
    redis = new Redis(deps.redisUrl, { lazyConnect: true, enableOfflineQueue: false, maxRetriesPerRequest: 1, enableAutoPipelining: true });
    redis.on('error', (err: Error) => deps.logger.warn({ err, role: 'rate-limit' }, 'redis connection error'));
    const untrack = trackRedis(redis, 'rate-limit');
    await redis.connect().catch((err: unknown) => deps.logger.warn({ err }, 'rate limits: Redis not reachable yet; requests pass until it is'));
    const r = redis;
    app.addHook('onClose', async () => {
      untrack();
      await r.quit().catch(() => r.disconnect());
    });
  }
  await app.register(rateLimit, { global: false, skipOnError: true, ...(redis ? { redis, nameSpace: 'orch:rl:' } : {}) });
  const limited = orchMetrics().rateLimited;
  const make = (limit: RateLimit, scope: string, key: (req: FastifyRequest) => string | undefined): ((req: FastifyRequest, reply: FastifyReply) => Promise<void>) => {
    const check = app.createRateLimit({
      max: limit.max,
      timeWindow: limit.window_seconds * 1000,
      keyGenerator: (req) => `${scope}:${key(req) ?? ''}`,
    });
    return async (req, reply) => {
      if (key(req) === undefined) return;
      const r = await check(req);
      if (r.isAllowed || !r.isExceeded) return;
      limited.add(1, { scope });
      const retryAfter = Math.max(1, r.ttlInSeconds ?? limit.window_seconds);
      reply.header('retry-after', String(retryAfter)).header('x-ratelimit-limit', String(limit.max)).header('x-ratelimit-remaining', '0').header('x-ratelimit-reset', String(retryAfter));
      throw new OrchError(Errors.RATE_LIMITED, `rate limit exceeded (${scope}: ${limit.max} requests per ${limit.window_seconds} s); retry in ${retryAfter} s`);
    };
  };
  const exemptIps = new Set(config.exempt_ips);
  const exemptTenants = new Set(config.exempt_tenants);
  const perIp = make(config.per_ip, 'ip', (req) => (UNCOUNTED.has(pathOf(req)) || exemptIps.has(req.ip) ? undefined : req.ip));
  app.addHook('onRequest', perIp);
  return {
    afterAuth() {
      const perTenant = make(config.per_tenant, 'tenant', (req) => {
        const tenant = req.principal?.tenantId;
        return tenant === undefined || exemptTenants.has(tenant) || !pathOf(req).startsWith('/v1/') ? undefined : tenant;
      });
      const perSource = make(config.per_webhook_source, 'webhook', (req) => {
        if (req.routeOptions.url !== '/v1/webhooks/:source') return undefined;
        const source = (req.params as { source?: unknown } | undefined)?.source;
        return typeof source === 'string' ? source : undefined;
      });
      app.addHook('onRequest', perTenant);
      app.addHook('onRequest', perSource);
    },
  };
}
