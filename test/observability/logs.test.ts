// Log lines carry trace_id and span_id of the active span (pino mixin in src/logging/logger.ts), children too, and
// none outside a span.
import test from 'ava';
import { InMemorySpanExporter, SimpleSpanProcessor } from '@opentelemetry/sdk-trace-base';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { createLogger } from '../../src/logging/logger.ts';
import { startTelemetry } from '../../src/observability/setup.ts';
import { inSpan } from '../../src/observability/tracing.ts';

const exporter = new InMemorySpanExporter();
const telemetry = startTelemetry({ spanProcessors: [new SimpleSpanProcessor(exporter)] });
test.after.always(() => telemetry.shutdown());

test('log lines inside a span carry its trace_id and span_id; outside none', async (t) => {
  const dir = await mkdtemp(path.join(os.tmpdir(), 'orch-logs-'));
  t.teardown(() => rm(dir, { recursive: true, force: true }));
  const file = path.join(dir, 'log.jsonl');
  const logger = createLogger({ level: 'info', destination: file });
  const child = logger.child({ component: 'test' });
  child.info('before');
  const ids = await inSpan('outer', {}, async (outer) => {
    child.info('in outer');
    const inner = await inSpan('inner', {}, async (span) => {
      await new Promise((r) => setTimeout(r, 5)); // across an await: the context follows
      logger.info({ call: { token: 'secret-value' } }, 'in inner');
      return span.spanContext();
    });
    return { outer: outer.spanContext(), inner };
  });
  child.info('after');
  await new Promise<void>((resolve, reject) => logger.flush((err) => (err ? reject(err) : resolve())));
  const lines = (await readFile(file, 'utf8')).trim().split('\n').map((l) => JSON.parse(l) as Record<string, unknown>);
  const byMsg = new Map(lines.map((l) => [l.msg, l]));
  t.is(byMsg.get('before')?.trace_id, undefined);
  t.is(byMsg.get('after')?.span_id, undefined);
  t.like(byMsg.get('in outer'), { trace_id: ids.outer.traceId, span_id: ids.outer.spanId, component: 'test' });
  t.like(byMsg.get('in inner'), { trace_id: ids.outer.traceId, span_id: ids.inner.spanId, call: { token: '[redacted]' } });
  t.is(ids.inner.traceId, ids.outer.traceId);
  t.deepEqual(exporter.getFinishedSpans().map((s) => s.name), ['inner', 'outer']);
});
