// OTLP export at the edge: a real `orch up` started with OTEL_EXPORTER_OTLP_ENDPOINT sends its spans over
// http/protobuf to a tiny collector started here (POST /v1/traces); a request made with a known traceparent shows
// up in what the collector received (the trace id's 16 raw bytes and the span name are in the protobuf body).
// Without the variable nothing is sent.
import test from 'ava';
import { randomBytes } from 'node:crypto';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { createServer, type IncomingHttpHeaders } from 'node:http';
import os from 'node:os';
import path from 'node:path';
import { otlpTracesUrlOf, parseOtlpHeaders, telemetryOptionsFromEnv } from '../../src/observability/setup.ts';
import { eventually, startOrchNode } from '../support/node-process.ts';
import { createTestDatabase } from '../support/pg.ts';

interface Received {
  url: string;
  headers: IncomingHttpHeaders;
  body: Buffer;
}

async function collector(t: import('ava').ExecutionContext): Promise<{ url: string; received: Received[] }> {
  const received: Received[] = [];
  const server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      received.push({ url: req.url ?? '', headers: req.headers, body: Buffer.concat(chunks) });
      // An empty ExportTraceServiceResponse (protobuf: zero bytes) is a full success.
      res.writeHead(200, { 'content-type': 'application/x-protobuf' });
      res.end();
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  t.teardown(() => new Promise<void>((resolve) => server.close(() => resolve())));
  const { port } = server.address() as { port: number };
  return { url: `http://127.0.0.1:${port}`, received };
}

async function nodeEnv(t: import('ava').ExecutionContext): Promise<Record<string, string | undefined>> {
  const dir = await mkdtemp(path.join(os.tmpdir(), 'orch-otlp-'));
  t.teardown(() => rm(dir, { recursive: true, force: true }));
  const database = await createTestDatabase({ migrated: true });
  t.teardown(() => database.drop());
  const nodeId = `otlp-${randomBytes(3).toString('hex')}`;
  const config = path.join(dir, 'node.yaml');
  await writeFile(config, `apiVersion: orch.dev/v1\nkind: NodeConfig\nmetadata: { name: ${nodeId} }\nspec:\n  node: { id: ${nodeId}, role: hybrid }\n`);
  return { ORCH_CONFIG: config, ORCH_DATA_DIR: path.join(dir, 'data'), DATABASE_URL: database.url, REDIS_URL: undefined, OTEL_EXPORTER_OTLP_ENDPOINT: undefined, OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: undefined };
}

test('orch up with OTEL_EXPORTER_OTLP_ENDPOINT exports spans over OTLP http/protobuf', async (t) => {
  const c = await collector(t);
  const node = await startOrchNode({ ...(await nodeEnv(t)), OTEL_EXPORTER_OTLP_ENDPOINT: c.url, OTEL_BSP_SCHEDULE_DELAY: '200', OTEL_SERVICE_NAME: 'orch-otlp-test' });
  t.teardown(() => node.child.kill('SIGKILL'));
  const traceId = randomBytes(16);
  const res = await fetch(`${node.banner.http}/v1/cluster/nodes`, {
    headers: { authorization: `Bearer ${node.banner.dev_token ?? ''}`, traceparent: `00-${traceId.toString('hex')}-${randomBytes(8).toString('hex')}-01` },
  });
  t.is(res.status, 200);
  const hit = await eventually(async () => c.received.find((r) => r.body.includes(traceId)), 20_000, 'the request span at the collector');
  t.is(hit.url, '/v1/traces');
  t.is(hit.headers['content-type'], 'application/x-protobuf');
  t.true(hit.body.includes(Buffer.from('GET /v1/cluster/nodes')), 'the HTTP server span, named by its route');
  t.true(hit.body.includes(Buffer.from('orch-otlp-test')), 'service.name from OTEL_SERVICE_NAME');
  t.true(hit.body.includes(Buffer.from('pg.SELECT')), 'the pg query spans under it');
});

test('without OTEL_EXPORTER_OTLP_ENDPOINT the edge installs no exporter and nothing is sent', async (t) => {
  const c = await collector(t);
  t.deepEqual(telemetryOptionsFromEnv({}), { serviceName: 'orch', otlpHeaders: {} }, 'no endpoint: trace context only, nothing exported');
  t.like(telemetryOptionsFromEnv({ OTEL_RESOURCE_ATTRIBUTES: 'deployment.environment=prod,team=a%2Cb' }), { resourceAttributes: { 'deployment.environment': 'prod', team: 'a,b' } });
  t.like(telemetryOptionsFromEnv({ OTEL_EXPORTER_OTLP_ENDPOINT: c.url, OTEL_EXPORTER_OTLP_HEADERS: 'x-api-key=a%20b,team=obs' }, 'n1'), {
    otlpEndpoint: c.url,
    serviceName: 'orch',
    serviceInstanceId: 'n1',
    otlpHeaders: { 'x-api-key': 'a b', team: 'obs' },
  });
  t.is(otlpTracesUrlOf('http://collector:4318/'), 'http://collector:4318/v1/traces');
  t.deepEqual(parseOtlpHeaders('bad,k=v'), { k: 'v' });
  const node = await startOrchNode(await nodeEnv(t));
  t.teardown(() => node.child.kill('SIGKILL'));
  const res = await fetch(`${node.banner.http}/v1/cluster/nodes`, { headers: { authorization: `Bearer ${node.banner.dev_token ?? ''}` } });
  t.is(res.status, 200);
  await new Promise((r) => setTimeout(r, 1500));
  t.is(c.received.length, 0);
});
