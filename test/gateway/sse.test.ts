// The two Server-Sent Events routes (GET /v1/executions/{id}/stream and GET /v1/workflows/executions/{id}/stream)
// share one writer (src/gateway/http/sse.ts). On a real node: the whole stream ends with its terminal event,
// Last-Event-ID resumes after the seq it names, follow=false ends with the events recorded when the request came
// (and opens and ends at once when there are none after Last-Event-ID), and refusals stay JSON.
import test from 'ava';
import { randomBytes, randomUUID } from 'node:crypto';
import { startHarness } from '../observability/harness.ts';

interface Frame {
  id: number;
  event: string;
  data: unknown;
}

function framesOf(text: string): Frame[] {
  return [...text.matchAll(/^id: (\d+)\nevent: (\w+)\ndata: (.*)$/gm)].map((m) => ({ id: Number(m[1]), event: m[2]!, data: JSON.parse(m[3]!) }));
}

test('execution and workflow streams: whole, resumed with Last-Event-ID, follow=false, and JSON refusals', async (t) => {
  const h = await startHarness(t);
  const sse = async (url: string, headers: Record<string, string> = {}): Promise<{ status: number; type: string | null; text: string }> => {
    const res = await fetch(`${h.http}${url}`, { headers: { authorization: `Bearer ${h.token}`, ...headers }, signal: AbortSignal.timeout(30_000) });
    return { status: res.status, type: res.headers.get('content-type'), text: await res.text() };
  };

  // An execution's stream: every event once, in order, ending with the terminal event.
  const exec = await h.runExecution(`sse-${randomBytes(3).toString('hex')}`);
  const whole = await sse(`/v1/executions/${exec}/stream`);
  t.is(whole.status, 200);
  t.is(whole.type, 'text/event-stream');
  t.true(whole.text.startsWith(': stream of execution events\n\n'));
  const all = framesOf(whole.text);
  t.true(all.length >= 3, `${all.length} events`);
  t.deepEqual(all.map((f) => f.id), all.map((_, i) => i + 1));
  t.is(all.at(-1)!.event, 'execution_completed');
  // Each frame's data is the event as JSON, keyed by its type (as the gRPC stream's oneof).
  for (const f of all) t.deepEqual(Object.keys(f.data as object), [f.event]);

  // Resumed after seq 2: the rest only.
  const resumed = framesOf((await sse(`/v1/executions/${exec}/stream`, { 'last-event-id': '2' })).text);
  t.deepEqual(resumed.map((f) => f.id), all.slice(2).map((f) => f.id));
  // A Last-Event-ID that is not a seq is ignored: from the start.
  t.is(framesOf((await sse(`/v1/executions/${exec}/stream`, { 'last-event-id': 'x' })).text).length, all.length);

  // follow=false: the events so far, then the end; after the last one there is nothing, and the stream still opens.
  t.deepEqual(framesOf((await sse(`/v1/executions/${exec}/stream?follow=false`)).text).map((f) => f.id), all.map((f) => f.id));
  const none = await sse(`/v1/executions/${exec}/stream?follow=false`, { 'last-event-id': String(all.at(-1)!.id) });
  t.is(none.status, 200);
  t.is(none.text, ': stream of execution events\n\n');

  // Refusals are plain JSON errors, before any 200.
  const badFollow = await sse(`/v1/executions/${exec}/stream?follow=maybe`);
  t.is(badFollow.status, 400);
  t.regex((JSON.parse(badFollow.text) as { error: string }).error, /follow/);
  const missing = await sse(`/v1/executions/${randomUUID()}/stream`);
  t.is(missing.status, 404);
  t.truthy((JSON.parse(missing.text) as { error: string }).error);

  // A workflow run's stream: the same framing, data keyed by the event type, resumable the same way.
  const run = await h.runWorkflow(`sse-wf-${randomBytes(3).toString('hex')}`);
  const wf = await sse(`/v1/workflows/executions/${run}/stream`);
  t.is(wf.status, 200);
  t.true(wf.text.startsWith(': stream of workflow events\n\n'));
  const wfAll = framesOf(wf.text);
  t.is(wfAll.at(-1)!.event, 'WorkflowExecutionCompleted');
  t.deepEqual(wfAll.map((f) => f.id), wfAll.map((_, i) => i + 1));
  for (const f of wfAll) t.deepEqual(Object.keys(f.data as object), [f.event]);
  const wfResumed = framesOf((await sse(`/v1/workflows/executions/${run}/stream`, { 'last-event-id': '1' })).text);
  t.deepEqual(wfResumed.map((f) => f.id), wfAll.slice(1).map((f) => f.id));
  const wfMissing = await sse(`/v1/workflows/executions/${randomUUID()}/stream`);
  t.is(wfMissing.status, 404);
  t.truthy((JSON.parse(wfMissing.text) as { error: string }).error);
});
