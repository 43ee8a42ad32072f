// Traces of a real in-process node, caught by an in-memory span exporter: an execution driven by the scripted
// model gives orch.execution → orch.execution.iteration → orch.llm.call and orch.tool_call (fs.write, made by the tool
// catalog); a workflow run gives orch.workflow.run → orch.workflow.state per state; HTTP requests get SERVER spans
// that continue the caller's traceparent and parent the pg query spans; a gRPC call gets a SERVER span.
import test from 'ava';
import { credentials, Metadata } from '@grpc/grpc-js';
import { SpanKind } from '@opentelemetry/api';
import { InMemorySpanExporter, SimpleSpanProcessor, type ReadableSpan } from '@opentelemetry/sdk-trace-base';
import { randomBytes } from 'node:crypto';
import { OrchRuntimeClient } from '../../src/gen/orch/runtime/v1/runtime.js';
import { startTelemetry } from '../../src/observability/setup.ts';
import { startHarness } from './harness.ts';

const exporter = new InMemorySpanExporter();
const telemetry = startTelemetry({ spanProcessors: [new SimpleSpanProcessor(exporter)] });
test.after.always(() => telemetry.shutdown());

const parentOf = (s: ReadableSpan): string | undefined => s.parentSpanContext?.spanId;
const childrenOf = (spans: ReadableSpan[], p: ReadableSpan, name?: string): ReadableSpan[] =>
  spans.filter((s) => parentOf(s) === p.spanContext().spanId && s.spanContext().traceId === p.spanContext().traceId && (name === undefined || s.name === name));

test('execution → iteration → LLM call and tool call; workflow → states; HTTP and gRPC server spans; pg spans', async (t) => {
  const h = await startHarness(t);
  const agent = `tracer-${randomBytes(3).toString('hex')}`;
  const executionId = await h.runExecution(agent);
  await telemetry.flush();
  let spans = exporter.getFinishedSpans();

  const exec = spans.find((s) => s.name === 'orch.execution' && s.attributes['orch.execution.id'] === executionId);
  if (!exec) return t.fail(`no orch.execution span; names: ${[...new Set(spans.map((s) => s.name))].join(', ')}`);
  t.is(exec.attributes['orch.agent.name'], agent);
  t.is(exec.attributes['orch.tenant.id'], h.tenant);
  t.is(exec.attributes['orch.execution.status'], 'completed');
  const iterations = childrenOf(spans, exec, 'orch.execution.iteration');
  t.is(iterations.length, 1, 'one-shot: one iteration span under the execution');
  const it1 = iterations[0]!;
  t.is(it1.attributes['orch.iteration'], 1);
  const llmCalls = childrenOf(spans, it1, 'orch.llm.call');
  t.is(llmCalls.length, 2, 'two model turns: the tool call, then the answer');
  t.is(llmCalls[0]!.attributes['gen_ai.usage.input_tokens'], 11);
  t.is(llmCalls[0]!.attributes['gen_ai.request.model'], 'default');
  const tools = childrenOf(spans, it1, 'orch.tool_call');
  t.is(tools.length, 1);
  t.is(tools[0]!.attributes['orch.tool.name'], 'fs.write');
  t.is(tools[0]!.attributes['orch.tool.origin'], 'inner_loop');
  t.is(tools[0]!.status.code, 0, 'the write succeeded: status unset');
  // The turn order inside the iteration: model, tool, model.
  const ordered = [...llmCalls, ...tools].sort((a, b) => a.startTime[0] - b.startTime[0] || a.startTime[1] - b.startTime[1]).map((s) => s.name);
  t.deepEqual(ordered, ['orch.llm.call', 'orch.tool_call', 'orch.llm.call']);
  // The loop's writes are pg spans inside the execution's trace.
  t.true(spans.some((s) => s.name.startsWith('pg.') && s.spanContext().traceId === exec.spanContext().traceId && s.kind === SpanKind.CLIENT));

  // HTTP: a SERVER span per request, named by route, continuing the caller's traceparent; pg spans beneath it.
  const traceId = randomBytes(16).toString('hex');
  const parentId = randomBytes(8).toString('hex');
  const got = await h.api('GET', `/v1/executions/${executionId}`, undefined, { traceparent: `00-${traceId}-${parentId}-01` });
  t.is(got.status, 200);
  await telemetry.flush();
  spans = exporter.getFinishedSpans();
  const server = spans.find((s) => s.spanContext().traceId === traceId && s.kind === SpanKind.SERVER);
  if (!server) return t.fail('no HTTP server span in the caller trace');
  t.is(server.name, 'GET /v1/executions/:id');
  t.is(parentOf(server), parentId);
  t.is(server.attributes['http.response.status_code'], 200);
  const queries = childrenOf(spans, server).filter((s) => s.name.startsWith('pg.'));
  t.true(queries.length >= 1, 'the handler ran under the request span: its queries are children');
  t.is(queries[0]!.attributes['db.system.name'], 'postgresql');
  t.regex(String(queries[0]!.attributes['db.query.text']), /executions/);

  // gRPC: a SERVER span named by the method path, continuing the caller's traceparent from metadata.
  const grpcTrace = randomBytes(16).toString('hex');
  const client = new OrchRuntimeClient(h.node.addresses.grpc, credentials.createInsecure());
  t.teardown(() => client.close());
  const md = new Metadata();
  md.set('authorization', `Bearer ${h.token}`);
  md.set('traceparent', `00-${grpcTrace}-${randomBytes(8).toString('hex')}-01`);
  await new Promise<void>((resolve) => {
    client.executeSystemCommand({ command: 'true', env: {} }, md, () => resolve());
  });
  await telemetry.flush();
  spans = exporter.getFinishedSpans();
  const rpc = spans.find((s) => s.spanContext().traceId === grpcTrace && s.kind === SpanKind.SERVER);
  if (!rpc) return t.fail('no gRPC server span');
  t.is(rpc.name, 'orch.runtime.v1.OrchRuntime/ExecuteSystemCommand');
  t.is(rpc.attributes['rpc.system'], 'grpc');
  t.is(typeof rpc.attributes['rpc.grpc.status_code'], 'number');

  // Workflow: the run span and one state span per state, in order.
  const wfName = `traced-${randomBytes(3).toString('hex')}`;
  const runId = await h.runWorkflow(wfName);
  await telemetry.flush();
  spans = exporter.getFinishedSpans();
  const run = spans.find((s) => s.name === 'orch.workflow.run' && s.attributes['orch.workflow.execution_id'] === runId);
  if (!run) return t.fail('no orch.workflow.run span');
  t.is(run.attributes['orch.workflow.name'], wfName);
  const states = childrenOf(spans, run, 'orch.workflow.state').sort((a, b) => a.startTime[0] - b.startTime[0] || a.startTime[1] - b.startTime[1]);
  t.deepEqual(states.map((s) => s.attributes['orch.workflow.state']), ['first', 'second']);
  t.deepEqual(states.map((s) => s.attributes['orch.workflow.state_kind']), ['System', 'System']);
});
