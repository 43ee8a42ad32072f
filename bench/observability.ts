// What tracing and metrics cost (issue 9, docs/OBSERVABILITY.md): PostgreSQL `SELECT 1` throughput through the Db
// adapter, each query under its own request span, tracing off (no provider: no-op spans) against tracing on (NodeTracerProvider,
// BatchSpanProcessor, OTLP http/protobuf exporter posting to a local sink), and the time of one /metrics rendering
// with 1,000 labelled series. `npm run bench -- observability [--seconds N] [--runs N]`.
import { createServer } from 'node:http';
import { silentLogger } from '../src/logging/logger.ts';
import { openPg } from '../src/storage/pg.ts';
import { orchMetrics, prometheusText } from '../src/observability/metrics.ts';
import { startTelemetry } from '../src/observability/setup.ts';
import { inSpan } from '../src/observability/tracing.ts';
import { createTestDatabase } from '../test/support/pg.ts';

export interface ObservabilityFigures {
  queriesOff: number;
  queriesOn: number;
  /** Tracing on with OTEL_TRACES_SAMPLER=parentbased_traceidratio, OTEL_TRACES_SAMPLER_ARG=0.1 (read by the SDK). */
  queriesSampled: number;
  spansExported: number;
  scrapeMs: number;
  scrapeBytes: number;
}

const CONCURRENCY = 8;

async function queriesPerSecond(db: { query(sql: string): Promise<unknown> }, seconds: number): Promise<number> {
  const until = Date.now() + seconds * 1000;
  let n = 0;
  // Each query is its own trace (a request span and the query span under it), as one API call with one query.
  await Promise.all(
    Array.from({ length: CONCURRENCY }, async () => {
      while (Date.now() < until) {
        await inSpan('bench.request', {}, () => db.query('SELECT 1'));
        n++;
      }
    }),
  );
  return n / seconds;
}

/** One run: off first (before any provider is registered), then on; the provider is removed again at the end. */
export async function benchObservability(seconds: number): Promise<ObservabilityFigures> {
  const database = await createTestDatabase();
  let exported = 0;
  const sink = createServer((req, res) => {
    req.on('data', () => undefined);
    req.on('end', () => {
      exported++;
      res.writeHead(200, { 'content-type': 'application/x-protobuf' });
      res.end();
    });
  });
  await new Promise<void>((r) => sink.listen(0, '127.0.0.1', r));
  const db = await openPg(database.url, { logger: silentLogger() });
  try {
    await queriesPerSecond(db, 1); // warm-up
    const queriesOff = await queriesPerSecond(db, seconds);
    const telemetry = startTelemetry({ otlpEndpoint: `http://127.0.0.1:${(sink.address() as { port: number }).port}`, exportIntervalMs: 500 });
    let queriesOn: number;
    try {
      queriesOn = await queriesPerSecond(db, seconds);
    } finally {
      await telemetry.shutdown();
    }
    process.env.OTEL_TRACES_SAMPLER = 'traceidratio';
    process.env.OTEL_TRACES_SAMPLER_ARG = '0.1';
    const sampled = startTelemetry({ otlpEndpoint: `http://127.0.0.1:${(sink.address() as { port: number }).port}`, exportIntervalMs: 500 });
    let queriesSampled: number;
    try {
      queriesSampled = await queriesPerSecond(db, seconds);
    } finally {
      await sampled.shutdown();
      delete process.env.OTEL_TRACES_SAMPLER;
      delete process.env.OTEL_TRACES_SAMPLER_ARG;
    }
    const m = orchMetrics();
    for (let a = 0; a < 100; a++) for (let t = 0; t < 10; t++) m.executionsStarted.add(1, { agent: `agent-${a}`, tenant: `tenant-${t}` });
    await prometheusText();
    const t0 = performance.now();
    const text = await prometheusText();
    const scrapeMs = performance.now() - t0;
    return { queriesOff, queriesOn, queriesSampled, spansExported: exported, scrapeMs, scrapeBytes: Buffer.byteLength(text) };
  } finally {
    await db.close();
    await new Promise<void>((r) => sink.close(() => r()));
    await database.drop();
  }
}
