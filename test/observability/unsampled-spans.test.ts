// With tracing off (no exporter: startTelemetry installs the AlwaysOffSampler) every span is non-recording. The
// per-statement helpers then make no child span at all (issue 24: a span object, its attributes and a context switch
// per statement, for nothing): a transaction run under a non-recording parent runs with that parent still active,
// where before it ran under a fresh non-recording child.
import test from 'ava';
import { trace } from '@opentelemetry/api';
import { inDbSpan } from '../../src/observability/db.ts';
import { startTelemetry } from '../../src/observability/setup.ts';
import { inSpan } from '../../src/observability/tracing.ts';

const telemetry = startTelemetry({ spanProcessors: [] });
test.after.always(() => telemetry.shutdown());

test('under a non-recording parent, a transaction and a statement run bare: no child span is made', async (t) => {
  await inSpan('parent', {}, async (parent) => {
    t.false(parent.isRecording(), 'tracing is off: the parent is not recording');
    const inTx = await inDbSpan('BEGIN', async () => trace.getActiveSpan(), 'tx');
    t.is(inTx, parent, 'the transaction ran under the parent itself, not a new span');
    const inStatement = await inDbSpan('SELECT 1', async () => trace.getActiveSpan());
    t.is(inStatement, parent);
  });
});
