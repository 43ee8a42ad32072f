// SEAL invoke latency: one signed tools/call (token check, Ed25519 verify over the payload, session, liveness +
// replay record, policy, route to orch.tools.list) in-process through SealService.invoke, and over HTTP
// (POST /v1/seal/invoke on a Fastify instance with the real routes, one keep-alive connection, sequential calls).
// Replay record: in the database (one INSERT … SELECT on PGlite per invoke) or, with `redisUrl`, a Redis SET NX
// with liveness from the Redis bus (src/seal/replay.ts, liveness.ts) — what a node with spec.redis.url does.
// Run: `tsx bench/seal.ts [calls] [redis://…]`, or from bench/run.ts via benchSeal().
import http from 'node:http';
import Fastify from 'fastify';
import { buildEnvelope, toHttpBody } from '../src/seal/client.ts';
import { installErrorHandling } from '../src/gateway/http/errors.ts';
import { registerSealRoutes } from '../src/gateway/http/seal-routes.ts';
import type { ToolCatalog } from '../src/tools/types.ts';
import { fixture } from '../test/seal/harness.ts';
import { openBus } from '../src/bus/open.ts';
import { silentLogger } from '../src/logging/logger.ts';
import { RedisReplayGuard } from '../src/seal/replay.ts';
import { percentile } from './stats.ts';

export interface SealFigures {
  calls: number;
  inProcessP50: number;
  inProcessP99: number;
  httpP50: number;
  httpP99: number;
}

function post(agent: http.Agent, port: number, body: string): Promise<number> {
  return new Promise((resolve, reject) => {
    const req = http.request({ host: '127.0.0.1', port, path: '/v1/seal/invoke', method: 'POST', agent, headers: { 'content-type': 'application/json', 'content-length': Buffer.byteLength(body) } }, (res) => {
      res.resume();
      res.on('end', () => resolve(res.statusCode ?? 0));
    });
    req.on('error', reject);
    req.end(body);
  });
}

/** `catalog`: the node's real catalog when given; else the test catalog (same contract). */
export async function benchSeal(calls = 2000, catalog?: ToolCatalog, o: { redisUrl?: string } = {}): Promise<SealFigures> {
  const replay = o.redisUrl ? await RedisReplayGuard.open(o.redisUrl) : undefined;
  const bus = o.redisUrl ? await openBus({ url: o.redisUrl }, silentLogger()) : undefined;
  const f = await fixture({ ...(catalog ? { catalog } : {}), deps: replay && bus ? { replay, bus } : {} });
  if (o.redisUrl && f.seal.replayStore !== 'redis') throw new Error('the Redis replay path is not in use');
  try {
    const sign = () => buildEnvelope('orch.tools.list', {}, { securityToken: f.token, privateKey: f.keys.privateKey });
    // Envelopes are signed before timing: signing is the agent's cost, not the orchestrator's.
    for (let i = 0; i < 200; i++) {
      const r = await f.seal.invoke(sign());
      if (r.httpStatus !== 200) throw new Error(`warm-up invoke answered ${r.httpStatus}: ${JSON.stringify(r.body)}`);
    }
    const envs = Array.from({ length: calls }, sign);
    const inProc: number[] = [];
    for (const e of envs) {
      const t0 = performance.now();
      const r = await f.seal.invoke(e);
      inProc.push(performance.now() - t0);
      if (r.httpStatus !== 200) throw new Error(`invoke answered ${r.httpStatus}`);
    }
    inProc.sort((a, b) => a - b);

    const app = Fastify();
    installErrorHandling(app);
    await registerSealRoutes(app, f.seal);
    await app.listen({ host: '127.0.0.1', port: 0 });
    const port = (app.server.address() as { port: number }).port;
    const agent = new http.Agent({ keepAlive: true, maxSockets: 1 });
    const bodies = Array.from({ length: calls + 200 }, () => JSON.stringify(toHttpBody(sign())));
    const overHttp: number[] = [];
    try {
      for (let i = 0; i < bodies.length; i++) {
        const t0 = performance.now();
        const status = await post(agent, port, bodies[i]!);
        if (i >= 200) overHttp.push(performance.now() - t0);
        if (status !== 200) throw new Error(`HTTP invoke answered ${status}`);
      }
    } finally {
      agent.destroy();
      await app.close();
    }
    overHttp.sort((a, b) => a - b);
    return {
      calls,
      inProcessP50: percentile(inProc, 50),
      inProcessP99: percentile(inProc, 99),
      httpP50: percentile(overHttp, 50),
      httpP99: percentile(overHttp, 99),
    };
  } finally {
    await f.seal.close();
    await replay?.close();
    await bus?.close();
    await f.close();
  }
}

if (import.meta.url === `file://${process.argv[1]}`) {
  const n = Number(process.argv[2] ?? 2000);
  const r = await benchSeal(Number.isFinite(n) && n > 0 ? n : 2000, undefined, process.argv[3] ? { redisUrl: process.argv[3] } : {});
  const ms = (x: number) => `${x.toFixed(3)} ms`;
  process.stdout.write(
    `SEAL invoke in-process  p50 ${ms(r.inProcessP50)}  p99 ${ms(r.inProcessP99)}  (${r.calls} calls)\n` +
      `SEAL invoke over HTTP   p50 ${ms(r.httpP50)}  p99 ${ms(r.httpP99)}  (${r.calls} calls)\n`,
  );
}
