// GET /metrics: the process's OpenTelemetry metrics in Prometheus text format (CONTRACT.md: no auth, loopback by
// default). Without `allowRemote` a peer that is not on a loopback address is refused with 403, so binding the API
// to a public address does not publish the metrics; a Prometheus server elsewhere needs `spec.metrics.allow_remote`.
import type { FastifyInstance } from 'fastify';
import { prometheusText, PROMETHEUS_CONTENT_TYPE } from '../../observability/metrics.ts';

export interface MetricsRouteOptions {
  /** Serve /metrics to any peer, not only loopback ones. Default false. */
  allowRemote?: boolean;
}

export function isLoopback(address: string | undefined): boolean {
  if (!address) return false;
  const a = address.startsWith('::ffff:') ? address.slice(7) : address;
  return a === '::1' || /^127\.\d{1,3}\.\d{1,3}\.\d{1,3}$/.test(a);
}

export function registerMetricsRoute(app: FastifyInstance, options: MetricsRouteOptions = {}): void {
  app.get('/metrics', async (request, reply) => {
    if (!options.allowRemote && !isLoopback(request.socket.remoteAddress)) {
      return reply.status(403).send({ error: 'metrics are served to loopback peers only (spec.metrics.allow_remote)' });
    }
    const text = await prometheusText();
    return reply.header('content-type', PROMETHEUS_CONTENT_TYPE).header('cache-control', 'no-store').send(text);
  });
}
