// What a run of built-in steps costs the node beside its steps (issue 16: at c = 64 over HTTP the node's CPU per
// workflow bounds the race): with tracing off (no exporter: startTelemetry's AlwaysOffSampler) no span is made under
// a parent whose children are never recorded, and nothing that does not log makes a pino child logger (a child
// serializes and redacts its bindings when made). Before, a 6-state run made a run span and 6 state spans (all
// non-recording), and three child loggers (the actor runtime's, the leased row's, the run's). That spans are still
// made when recorded is test/observability/traces.test.ts.
import test from 'ava';
import type { Tracer } from '@opentelemetry/api';
import { pino } from 'pino';
import { startTelemetry } from '../../src/observability/setup.ts';
import { inSpan } from '../../src/observability/tracing.ts';
import { manifest, startEngine } from './engine-harness.ts';

const telemetry = startTelemetry({ spanProcessors: [] });
test.after.always(() => telemetry.shutdown());

const STATES = 6;
const chain = manifest(
  'quiet',
  's0',
  Array.from({ length: STATES }, (_, i) => {
    const next = i + 1 < STATES ? `[{ target: s${i + 1} }]` : '[]';
    return `    s${i}:\n      kind: System\n      command: 'update_blackboard {"v${i}": ${i}}'\n      transitions: ${next}\n`;
  }).join(''),
);

/** Counts the spans started through the SDK's tracer (every span of the process) and pino children made, by name. */
function watch(): { spans: Map<string, number>; children: { n: number }; stop: () => void } {
  const spans = new Map<string, number>();
  const children = { n: 0 };
  const sdkTracer = Object.getPrototypeOf(telemetry.provider.getTracer('orch')) as Tracer;
  const startSpan = sdkTracer.startSpan;
  sdkTracer.startSpan = function (this: Tracer, name, ...rest) {
    spans.set(name, (spans.get(name) ?? 0) + 1);
    return startSpan.call(this, name, ...rest);
  };
  // pino() makes each logger from Object.create(its shared prototype): child() is on that prototype.
  const proto = Object.getPrototypeOf(Object.getPrototypeOf(pino({ level: 'silent' }))) as { child: (...a: unknown[]) => unknown };
  const child = proto.child;
  proto.child = function (this: unknown, ...a: unknown[]) {
    children.n++;
    return child.apply(this, a);
  };
  return {
    spans,
    children,
    stop: () => {
      sdkTracer.startSpan = startSpan;
      proto.child = child;
    },
  };
}

test('tracing off: a run of built-in states makes no state span and no child logger', async (t) => {
  const h = await startEngine(t, { logger: pino({ level: 'warn' }, pino.destination({ dest: '/dev/null', sync: true })) });
  await h.deploy(chain);
  const w = watch();
  t.teardown(() => w.stop());
  // Started under a request's span, as over HTTP: not recording (AlwaysOffSampler), so none of its children would be.
  const id = await inSpan('POST /v1/workflows/:name/run', {}, async (span) => {
    t.false(span.isRecording());
    return h.run('quiet');
  });
  const row = await h.waitFor(id);
  w.stop();
  t.is(row.status, 'completed', row.error ?? '');
  t.is(w.spans.get('orch.workflow.state') ?? 0, 0, `state spans: ${JSON.stringify([...w.spans])}`);
  t.is(w.spans.get('orch.workflow.run') ?? 0, 0, `run spans: ${JSON.stringify([...w.spans])}`);
  t.is(w.children.n, 0, 'child loggers made while the run ran');
});
