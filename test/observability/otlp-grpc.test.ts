// OTLP over gRPC (issue 19): a real `orch up` started with OTEL_EXPORTER_OTLP_PROTOCOL=grpc sends its spans to a
// collector stub started here: a @grpc/grpc-js server implementing opentelemetry.proto.collector.trace.v1
// TraceService/Export. The request is decoded (protobuf wire format, below) down to its spans: the span of a request
// made with a known traceparent is there, with that trace id and its route's name, and the OTLP headers arrived as
// gRPC metadata.
import test from 'ava';
import { randomBytes } from 'node:crypto';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { Server, ServerCredentials, type Metadata, type ServiceDefinition } from '@grpc/grpc-js';
import { otlpProtocolOf, telemetryOptionsFromEnv } from '../../src/observability/setup.ts';
import { eventually, startOrchNode } from '../support/node-process.ts';
import { createTestDatabase } from '../support/pg.ts';

/** Length-delimited fields (wire type 2) of one protobuf message, by field number; other wire types skipped. */
function fields(buf: Buffer): Map<number, Buffer[]> {
  const out = new Map<number, Buffer[]>();
  let i = 0;
  const varint = (): number => {
    let v = 0;
    let shift = 0;
    for (;;) {
      const b = buf[i++]!;
      v += (b & 0x7f) * 2 ** shift;
      if (b < 0x80) return v;
      shift += 7;
    }
  };
  while (i < buf.length) {
    const key = varint();
    const field = Math.floor(key / 8);
    const wire = key & 7;
    if (wire === 0) varint();
    else if (wire === 1) i += 8;
    else if (wire === 5) i += 4;
    else if (wire === 2) {
      const len = varint();
      out.set(field, [...(out.get(field) ?? []), buf.subarray(i, i + len)]);
      i += len;
    } else throw new Error(`unexpected wire type ${wire}`);
  }
  return out;
}

interface DecodedSpan {
  traceId: string;
  name: string;
}

/** ExportTraceServiceRequest{1: ResourceSpans{2: ScopeSpans{2: Span{1: trace_id, 5: name}}}} → spans. */
function spansOf(request: Buffer): DecodedSpan[] {
  const spans: DecodedSpan[] = [];
  for (const rs of fields(request).get(1) ?? []) {
    for (const ss of fields(rs).get(2) ?? []) {
      for (const span of fields(ss).get(2) ?? []) {
        const f = fields(span);
        spans.push({ traceId: f.get(1)?.[0]?.toString('hex') ?? '', name: f.get(5)?.[0]?.toString('utf8') ?? '' });
      }
    }
  }
  return spans;
}

interface Export {
  metadata: Metadata;
  spans: DecodedSpan[];
}

async function grpcCollector(t: import('ava').ExecutionContext): Promise<{ url: string; received: Export[] }> {
  const received: Export[] = [];
  const raw = (b: Buffer): Buffer => b;
  const service: ServiceDefinition = {
    Export: {
      path: '/opentelemetry.proto.collector.trace.v1.TraceService/Export',
      requestStream: false,
      responseStream: false,
      requestSerialize: raw,
      requestDeserialize: raw,
      responseSerialize: raw,
      responseDeserialize: raw,
    },
  };
  const server = new Server();
  server.addService(service, {
    Export: (call: { request: Buffer; metadata: Metadata }, callback: (err: null, response: Buffer) => void) => {
      received.push({ metadata: call.metadata, spans: spansOf(call.request) });
      // An empty ExportTraceServiceResponse (zero bytes) is a full success.
      callback(null, Buffer.alloc(0));
    },
  });
  const port = await new Promise<number>((resolve, reject) => server.bindAsync('127.0.0.1:0', ServerCredentials.createInsecure(), (err, p) => (err ? reject(err) : resolve(p))));
  t.teardown(() => new Promise<void>((resolve) => server.tryShutdown(() => resolve())));
  return { url: `http://127.0.0.1:${port}`, received };
}

test('orch up with OTEL_EXPORTER_OTLP_PROTOCOL=grpc exports spans to a gRPC TraceService', async (t) => {
  const c = await grpcCollector(t);
  const dir = await mkdtemp(path.join(os.tmpdir(), 'orch-otlp-grpc-'));
  t.teardown(() => rm(dir, { recursive: true, force: true }));
  const database = await createTestDatabase({ migrated: true });
  t.teardown(() => database.drop());
  const nodeId = `otlpg-${randomBytes(3).toString('hex')}`;
  const config = path.join(dir, 'node.yaml');
  await writeFile(config, `apiVersion: orch.dev/v1\nkind: NodeConfig\nmetadata: { name: ${nodeId} }\nspec:\n  node: { id: ${nodeId}, role: hybrid }\n`);
  const node = await startOrchNode({
    ORCH_CONFIG: config,
    ORCH_DATA_DIR: path.join(dir, 'data'),
    DATABASE_URL: database.url,
    REDIS_URL: undefined,
    OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: undefined,
    OTEL_EXPORTER_OTLP_ENDPOINT: c.url,
    OTEL_EXPORTER_OTLP_PROTOCOL: 'grpc',
    OTEL_EXPORTER_OTLP_HEADERS: 'x-api-key=k%201',
    OTEL_BSP_SCHEDULE_DELAY: '200',
  });
  t.teardown(() => node.child.kill('SIGKILL'));
  const traceId = randomBytes(16).toString('hex');
  const res = await fetch(`${node.banner.http}/v1/cluster/nodes`, {
    headers: { authorization: `Bearer ${node.banner.dev_token ?? ''}`, traceparent: `00-${traceId}-${randomBytes(8).toString('hex')}-01` },
  });
  t.is(res.status, 200);
  const hit = await eventually(async () => c.received.find((e) => e.spans.some((s) => s.traceId === traceId)), 20_000, 'the request span at the gRPC collector');
  const names = hit.spans.filter((s) => s.traceId === traceId).map((s) => s.name);
  t.true(names.includes('GET /v1/cluster/nodes'), `the HTTP server span, named by its route (got ${names.join(', ')})`);
  t.deepEqual(hit.metadata.get('x-api-key'), ['k 1'], 'OTEL_EXPORTER_OTLP_HEADERS as gRPC metadata');
});

test('the protocol variables: grpc or http/protobuf, the traces-specific one first, anything else refused', (t) => {
  t.is(otlpProtocolOf({}), undefined);
  t.is(otlpProtocolOf({ OTEL_EXPORTER_OTLP_PROTOCOL: 'grpc' }), 'grpc');
  t.is(otlpProtocolOf({ OTEL_EXPORTER_OTLP_PROTOCOL: 'grpc', OTEL_EXPORTER_OTLP_TRACES_PROTOCOL: 'http/protobuf' }), 'http/protobuf');
  t.throws(() => otlpProtocolOf({ OTEL_EXPORTER_OTLP_PROTOCOL: 'http/json' }), { message: /OTEL_EXPORTER_OTLP_PROTOCOL: must be one of grpc|http\/protobuf/ });
  t.like(telemetryOptionsFromEnv({ OTEL_EXPORTER_OTLP_ENDPOINT: 'http://c:4317', OTEL_EXPORTER_OTLP_PROTOCOL: 'grpc' }), { otlpEndpoint: 'http://c:4317', otlpProtocol: 'grpc' });
});
