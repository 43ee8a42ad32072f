// What operators expect of a node (issue 19), on a real `orch up` with PostgreSQL and Redis and no OTLP exporter:
// HTTP and gRPC request-duration histograms by route/method and status, Node.js runtime metrics (event-loop delay,
// heap, GC), database-pool and Redis connection metrics, OTEL_RESOURCE_ATTRIBUTES in target_info, and trace/span
// ids in the log line of every request even though no exporter is configured (before: only with one).
import test from 'ava';
import { credentials, Metadata, type ServiceError } from '@grpc/grpc-js';
import { randomBytes } from 'node:crypto';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { OrchRuntimeClient } from '../../src/gen/orch/runtime/v1/runtime.js';
import { eventually, startOrchNode } from '../support/node-process.ts';
import { createTestDatabase } from '../support/pg.ts';
import { parsePrometheusText, valueOf } from './prometheus-text.ts';

test('a node serves request, runtime and client metrics, its resource attributes, and trace ids in request logs', async (t) => {
  const dir = await mkdtemp(path.join(os.tmpdir(), 'orch-opmetrics-'));
  t.teardown(() => rm(dir, { recursive: true, force: true }));
  const database = await createTestDatabase({ migrated: true });
  t.teardown(() => database.drop());
  const nodeId = `opm-${randomBytes(3).toString('hex')}`;
  const config = path.join(dir, 'node.yaml');
  await writeFile(config, `apiVersion: orch.dev/v1\nkind: NodeConfig\nmetadata: { name: ${nodeId} }\nspec:\n  node: { id: ${nodeId}, role: hybrid }\n`);
  const node = await startOrchNode({
    ORCH_CONFIG: config,
    ORCH_DATA_DIR: path.join(dir, 'data'),
    DATABASE_URL: database.url,
    REDIS_URL: process.env.REDIS_URL ?? 'redis://127.0.0.1:6379',
    OTEL_EXPORTER_OTLP_ENDPOINT: undefined,
    OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: undefined,
    OTEL_RESOURCE_ATTRIBUTES: 'deployment.environment=ci-test,team=a%2Cb',
  });
  t.teardown(() => node.child.kill('SIGKILL'));
  const auth = { authorization: `Bearer ${node.banner.dev_token ?? ''}` };

  // Requests: a listed route twice (200), a missing execution (404 on a parametrised route), no route at all.
  const traceId = randomBytes(16).toString('hex');
  const requestId = `opm-${randomBytes(6).toString('hex')}`;
  const listed = await fetch(`${node.banner.http}/v1/cluster/nodes`, { headers: { ...auth, traceparent: `00-${traceId}-${randomBytes(8).toString('hex')}-01`, 'x-request-id': requestId } });
  t.is(listed.status, 200);
  t.is((await fetch(`${node.banner.http}/v1/cluster/nodes`, { headers: auth })).status, 200);
  t.is((await fetch(`${node.banner.http}/v1/executions/${randomBytes(16).toString('hex').replace(/(.{8})(.{4})(.{4})(.{4})(.{12})/, '$1-$2-$3-$4-$5')}`, { headers: auth })).status, 404);
  t.is((await fetch(`${node.banner.http}/no/such/route`, { headers: auth })).status, 404);
  // gRPC: one call refused for want of a token.
  const client = new OrchRuntimeClient(node.banner.grpc.replace(/^grpc:\/\//, ''), credentials.createInsecure());
  t.teardown(() => client.close());
  const code = await new Promise<number>((resolve) =>
    client.queryCortexPatterns({ errorSignature: 'x', errorType: '', limit: 1 } as never, new Metadata(), (err: ServiceError | null) => resolve(err?.code ?? 0)),
  );
  t.is(code, 16, 'UNAUTHENTICATED');
  const text = await eventually(async () => {
    const res = await fetch(`${node.banner.http}/metrics`);
    const body = await res.text();
    return /orch_grpc_request_duration_seconds_count/.test(body) ? body : undefined;
  }, 60_000, 'the gRPC call in /metrics');
  const e = parsePrometheusText(text);
  if (process.env.OBS_DUMP) console.log(text);

  t.is(e.types.get('orch_http_request_duration_seconds'), 'histogram');
  t.is(valueOf(e, 'orch_http_request_duration_seconds_count', { method: 'GET', route: '/v1/cluster/nodes', status: '200' }), 2);
  t.is(valueOf(e, 'orch_http_request_duration_seconds_count', { method: 'GET', route: '/v1/executions/:id', status: '404' }), 1);
  t.is(valueOf(e, 'orch_http_request_duration_seconds_count', { method: 'GET', route: 'unmatched', status: '404' }), 1);
  t.is(e.types.get('orch_grpc_request_duration_seconds'), 'histogram');
  t.is(valueOf(e, 'orch_grpc_request_duration_seconds_count', { method: '/orch.runtime.v1.OrchRuntime/QueryCortexPatterns', status: 'UNAUTHENTICATED' }), 1);

  t.is(e.types.get('nodejs_eventloop_delay_p99_seconds'), 'gauge');
  t.true(e.samples.some((s) => s.name === 'nodejs_eventloop_delay_p99_seconds'), 'event-loop delay measured');
  t.true(valueOf(e, 'nodejs_heap_size_used_bytes') > 1_000_000);
  t.true(valueOf(e, 'nodejs_heap_size_total_bytes') >= valueOf(e, 'nodejs_heap_size_used_bytes'));
  t.true(valueOf(e, 'process_resident_memory_bytes') > 10_000_000);
  t.is(e.types.get('nodejs_gc_duration_seconds'), 'histogram');
  t.true(valueOf(e, 'nodejs_gc_duration_seconds_count') >= 1, 'the node has collected garbage since it started');

  const db = database.url.split('/').pop()!.split('?')[0]!;
  t.true(valueOf(e, 'orch_db_pool_connections', { database: db, state: 'total' }) >= 1);
  t.is(valueOf(e, 'orch_db_pool_connections', { database: db, state: 'waiting' }), 0);
  t.is(valueOf(e, 'orch_redis_connected', { client: 'bus-publisher' }), 1);
  t.is(valueOf(e, 'orch_redis_connected', { client: 'bus-subscriber' }), 1);

  // The resource: OTEL_RESOURCE_ATTRIBUTES and the node id, in target_info.
  t.like(e.samples.find((s) => s.name === 'target_info')?.labels, { deployment_environment: 'ci-test', team: 'a,b', service_name: 'orch', service_instance_id: nodeId });

  // Every log line of a request carries its trace and span: the caller's trace id continued.
  const line = await eventually(async () => node.stderr().split('\n').find((l) => l.includes(requestId) && l.includes('"msg":"request"')), 30_000, 'the request log line');
  const parsed = JSON.parse(line) as { trace_id?: string; span_id?: string };
  t.is(parsed.trace_id, traceId);
  t.regex(parsed.span_id ?? '', /^[0-9a-f]{16}$/);
  // …and a request without a traceparent gets a fresh trace.
  const other = node.stderr().split('\n').filter((l) => l.includes('"msg":"request"') && l.includes('/v1/executions/'));
  t.true(other.length >= 1);
  t.regex((JSON.parse(other[0]!) as { trace_id?: string }).trace_id ?? '', /^[0-9a-f]{32}$/);
});
