// ValidateWithJudges over gRPC on an in-process node over PostgreSQL: every judge is a real agent execution (process
// isolation) whose model is the scripted OpenAI-compatible server. Proves: input_template rendering over output,
// task and context_json; weights; the four proto strategies (and n, best_of_n) against hand-computed figures from
// computeConsensus, the code ParallelAgents uses; a judge answering invalid JSON (or too short a reasoning) is left
// out and min_judges_required decides; bad input answers INVALID_ARGUMENT / NOT_FOUND before any judge runs.
import test from 'ava';
import { randomUUID } from 'node:crypto';
import { credentials, Metadata, status, type ServiceError } from '@grpc/grpc-js';
import { silentLogger } from '../../src/logging/logger.ts';
import type { RunningNode } from '../../src/node/node.ts';
import { AgentService } from '../../src/agents/service.ts';
import { OrchRuntimeClient, type ValidateRequest, type ValidateResponse } from '../../src/gen/orch/runtime/v1/runtime.js';
import { startTestNode, type TestNode } from '../support/in-process-node.ts';
import { startScriptedLlm, type ChatRequest, type ScriptedLlm } from '../support/scripted-llm.ts';

// Judge answers, keyed by the marker in each judge agent's instruction.
const ANSWERS: Record<string, string> = {
  J_HIGH: '{"score": 0.9, "confidence": 0.9, "reasoning": "clear, correct and complete", "verdict": "pass"}',
  J_MID: '```json\n{"score": 0.6, "confidence": 0.8, "reasoning": "mostly right, one gap", "suggestions": ["cover the edge case"]}\n```',
  J_LOW: '{"score": 0.3, "confidence": 0.6, "reasoning": "misses the main point", "verdict": "fail"}',
  J_PROSE: 'I liked it, looks fine to me.',
  J_SHORT: '{"score": 0.8, "confidence": 0.9, "reasoning": "ok"}',
  J_RANGE: '{"score": 1.4, "confidence": 0.9, "reasoning": "far beyond expectations"}',
  J_SLOW: '{"score": 0.9, "confidence": 0.9, "reasoning": "slow but sure of it"}',
};

const judgeYaml = (name: string, marker: string): string => `apiVersion: orch.dev/v1
kind: Agent
metadata: { name: ${name}, version: 1.0.0 }
spec:
  runtime: { language: node, version: "20", model: default }
  task: { instruction: "${marker} You judge outputs." }
  execution: { mode: one-shot }
`;

const cleanups: (() => Promise<unknown> | unknown)[] = [];
let node: RunningNode;
let llm: ScriptedLlm;
let grpc: InstanceType<typeof OrchRuntimeClient>;
let token: string;
let tokenFor: TestNode['token'];
const tenant = `jt-${randomUUID().slice(0, 8)}`;

test.before(async () => {
  const userOf = (body: ChatRequest): string => String(body.messages.find((m) => m.role === 'user')?.content ?? '');
  llm = await startScriptedLlm(
    (body) => {
      const marker = Object.keys(ANSWERS).find((k) => userOf(body).startsWith(k));
      return { content: marker ? ANSWERS[marker] : 'no marker' };
    },
    // J_SLOW judges answer after 300 s: the caller's deadline passes first.
    { delayMs: (body) => (userOf(body).startsWith('J_SLOW') ? 300_000 : 0) },
  );
  cleanups.push(() => llm.close());
  const started = await startTestNode((fn) => void cleanups.push(fn), { name: 'judges', llmUrl: llm.url });
  node = started.node;
  tokenFor = started.token;
  token = await tokenFor(tenant);
  grpc = new OrchRuntimeClient(node.addresses.grpc, credentials.createInsecure());
  const agents = new AgentService(node.db, silentLogger());
  for (const [name, marker] of [
    ['judge-high', 'J_HIGH'],
    ['judge-mid', 'J_MID'],
    ['judge-low', 'J_LOW'],
    ['judge-prose', 'J_PROSE'],
    ['judge-short', 'J_SHORT'],
    ['judge-range', 'J_RANGE'],
    ['judge-slow', 'J_SLOW'],
  ] as const) {
    await agents.deploy({ tenant, subject: 'dev-user', yaml: judgeYaml(name, marker) });
  }
});

test.after.always(async () => {
  grpc?.close();
  for (const fn of cleanups.reverse()) await fn();
});

function validate(req: Partial<ValidateRequest>, deadlineMs = 120_000): Promise<{ code: number; details?: string; res?: ValidateResponse }> {
  const md = new Metadata();
  md.set('authorization', `Bearer ${token}`);
  const full: ValidateRequest = { output: 'the output', task: 'the task', judges: [], context_json: '', ...req };
  return new Promise((resolve) => {
    grpc.validateWithJudges(full, md, { deadline: Date.now() + deadlineMs }, (err: ServiceError | null, res?: ValidateResponse) => {
      if (err) resolve({ code: err.code, details: err.details });
      else resolve({ code: status.OK, ...(res ? { res } : {}) });
    });
  });
}

/** proto floats are float32. */
function near(t: { true: (v: boolean, m?: string) => void }, actual: number | undefined, expected: number, what: string): void {
  t.true(actual !== undefined && Math.abs(actual - expected) < 1e-5, `${what}: ${actual} expected ${expected}`);
}

const THREE = [
  { agent_id: 'judge-high', input_template: 'J_HIGH {{output}}', weight: 1 },
  { agent_id: 'judge-mid', input_template: 'J_MID {{output}}', weight: 2 },
  { agent_id: 'judge-low', input_template: 'J_LOW {{output}}', weight: 0 }, // 0 is unset: 1.0
];

async function executionCount(): Promise<number> {
  const r = await node.db.query<{ n: string }>('SELECT count(*)::text AS n FROM executions WHERE tenant_id = $1', [tenant]);
  return Number(r.rows[0]?.n ?? 0);
}

test.serial('WEIGHTED_AVERAGE: weighted mean, confidence from variance and self-confidence; judges are executions; template rendered', async (t) => {
  const r = await validate({
    output: 'def add(a, b): return a + b',
    task: 'write add',
    context_json: JSON.stringify({ lang: 'python' }),
    judges: [
      { agent_id: 'judge-high', input_template: 'J_HIGH task={{task}} lang={{context.lang}} out={{output}}', weight: 1 },
      THREE[1]!,
      THREE[2]!,
    ],
    consensus: { strategy: 0, threshold: 0.7 },
  });
  t.is(r.code, status.OK, r.details);
  const res = r.res!;
  // scores 0.9, 0.6, 0.3 with weights 1, 2, 1: mean 2.4/4 = 0.6; variance (0.09 + 0 + 0.09)/4 = 0.045;
  // agreement 1 - 2*sqrt(0.045) = 0.5757359; self-confidence (0.9 + 1.6 + 0.6)/4 = 0.775;
  // confidence 0.7*0.5757359 + 0.3*0.775 = 0.6355151.
  near(t, res.score, 0.6, 'score');
  near(t, res.confidence, 0.6355151, 'confidence');
  t.false(res.binary_valid);
  t.deepEqual(res.individual_results.map((i) => [i.agent_id, i.weight, i.binary_valid]), [
    ['judge-high', 1, true],
    ['judge-mid', 2, false],
    ['judge-low', 1, false],
  ]);
  near(t, res.individual_results[1]?.score, 0.6, 'judge-mid score (from a ```json fence)');
  t.is(res.individual_results[0]?.reasoning, 'clear, correct and complete');
  t.regex(res.reasoning, /weighted_average: score 0\.600/);
  // Each judge ran as its own completed execution, whose input is the rendered template.
  const rows = await node.db.query<{ id: string; status: string; input: string }>('SELECT id, status, input FROM executions WHERE id = ANY($1::uuid[])', [
    res.individual_results.map((i) => i.execution_id),
  ]);
  t.is(rows.rows.length, 3);
  t.true(rows.rows.every((e) => e.status === 'completed'));
  t.true(rows.rows.some((e) => e.input === 'J_HIGH task=write add lang=python out=def add(a, b): return a + b'), JSON.stringify(rows.rows.map((e) => e.input)));
});

test.serial('WEIGHTED_AVERAGE with n = 2 is best_of_n: the top two by score x confidence, averaged by weight', async (t) => {
  const r = await validate({ judges: THREE, consensus: { strategy: 0, threshold: 0.7, n: 2 } });
  t.is(r.code, status.OK, r.details);
  // rank 0.81 (high), 0.48 (mid), 0.18 (low) → high, mid; score (0.9 + 1.2)/3 = 0.7; variance (0.04 + 2*0.01)/3 = 0.02;
  // agreement 1 - 2*sqrt(0.02) = 0.7171573; self (0.9 + 1.6)/3 = 0.8333333; confidence 0.5020101 + 0.25 = 0.7520101.
  near(t, r.res?.score, 0.7, 'score');
  near(t, r.res?.confidence, 0.7520101, 'confidence');
  t.true(r.res?.binary_valid);
});

test.serial('MAJORITY_VOTE: simple majority at the threshold, confidence is the vote margin', async (t) => {
  const pass = await validate({ judges: THREE, consensus: { strategy: 1, threshold: 0.5 } });
  t.is(pass.code, status.OK, pass.details);
  // pass: high, mid; fail: low. Score = weighted mean of the winners (0.9 + 1.2)/3 = 0.7; margin (2-1)/3.
  near(t, pass.res?.score, 0.7, 'score');
  near(t, pass.res?.confidence, 1 / 3, 'confidence');
  t.true(pass.res?.binary_valid);
  const fail = await validate({ judges: THREE, consensus: { strategy: 1, threshold: 0.7 } });
  // pass: high; fail: mid, low → the failing side wins: (1.2 + 0.3)/3 = 0.5; margin 1/3.
  near(t, fail.res?.score, 0.5, 'score');
  near(t, fail.res?.confidence, 1 / 3, 'confidence');
  t.false(fail.res?.binary_valid);
});

test.serial('UNANIMOUS: every judge at the threshold; confidence is the minimum confidence', async (t) => {
  const fail = await validate({ judges: THREE, consensus: { strategy: 2, threshold: 0.7 } });
  t.is(fail.code, status.OK, fail.details);
  near(t, fail.res?.score, 0.3, 'score (the lowest when not unanimous)');
  near(t, fail.res?.confidence, 0.6, 'confidence');
  t.false(fail.res?.binary_valid);
  const pass = await validate({ judges: THREE, consensus: { strategy: 2, threshold: 0.25 } });
  near(t, pass.res?.score, 0.6, 'score (weighted mean when unanimous)');
  near(t, pass.res?.confidence, 0.6, 'confidence');
  t.true(pass.res?.binary_valid);
});

test.serial('ANY_APPROVED: valid when one judge approves; figures of the approving judges', async (t) => {
  const one = await validate({ judges: THREE, consensus: { strategy: 3, threshold: 0.7 } });
  t.is(one.code, status.OK, one.details);
  // only judge-high approves: score 0.9, agreement 1, self 0.9 → confidence 0.7 + 0.27 = 0.97.
  near(t, one.res?.score, 0.9, 'score');
  near(t, one.res?.confidence, 0.97, 'confidence');
  t.true(one.res?.binary_valid);
  const none = await validate({ judges: THREE, consensus: { strategy: 3, threshold: 0.95 } });
  near(t, none.res?.score, 0.6, 'score (all judges when none approves)');
  near(t, none.res?.confidence, 0.6355151, 'confidence');
  t.false(none.res?.binary_valid);
});

test.serial('agreement: a consensus below the required confidence is not valid', async (t) => {
  const r = await validate({ judges: THREE, consensus: { strategy: 0, threshold: 0.5, agreement: 0.7 } });
  t.is(r.code, status.OK, r.details);
  near(t, r.res?.score, 0.6, 'score');
  t.false(r.res?.binary_valid, 'score 0.6 passes 0.5 but confidence 0.636 < 0.7');
});

test.serial('invalid judge JSON is not counted; min_judges_required decides', async (t) => {
  const judges = [
    THREE[0]!,
    THREE[1]!,
    { agent_id: 'judge-prose', input_template: 'J_PROSE {{output}}', weight: 1 },
    { agent_id: 'judge-short', input_template: 'J_SHORT {{output}}', weight: 1 },
    { agent_id: 'judge-range', input_template: 'J_RANGE {{output}}', weight: 1 },
  ];
  const enough = await validate({ judges, consensus: { strategy: 0, threshold: 0.7, min_judges_required: 2 } });
  t.is(enough.code, status.OK, enough.details);
  // high (w1) and mid (w2) only: (0.9 + 1.2)/3 = 0.7.
  near(t, enough.res?.score, 0.7, 'score over the two valid judges');
  t.true(enough.res?.binary_valid);
  const results = enough.res!.individual_results;
  t.is(results.length, 5);
  t.deepEqual(
    results.map((r) => r.error === undefined),
    [true, true, false, false, false],
  );
  t.regex(results[2]!.error!, /not JSON/);
  t.regex(results[3]!.error!, /reasoning.*10/);
  t.regex(results[4]!.error!, /score/);
  t.regex(enough.res!.reasoning, /judge-prose: not counted/);

  const short = await validate({ judges, consensus: { strategy: 0, threshold: 0.7, min_judges_required: 3 } });
  t.is(short.code, status.OK, short.details);
  t.false(short.res?.binary_valid);
  t.is(short.res?.score, 0);
  t.is(short.res?.confidence, 0);
  t.regex(short.res!.reasoning, /only 2 of the 3 required judges completed/);
  t.is(short.res?.individual_results.length, 5);
});

test.serial('bad input: INVALID_ARGUMENT or NOT_FOUND, and no judge runs', async (t) => {
  const before = await executionCount();
  const cases: [string, Partial<ValidateRequest>, number, RegExp][] = [
    ['no judges', { judges: [] }, status.INVALID_ARGUMENT, /at least one judge/],
    ['unknown agent', { judges: [THREE[0]!, { agent_id: 'no-such-judge', input_template: '', weight: 1 }] }, status.NOT_FOUND, /Agent not found/],
    ['empty agent id', { judges: [{ agent_id: ' ', input_template: '', weight: 1 }] }, status.INVALID_ARGUMENT, /agent_id/],
    ['bad strategy', { judges: THREE, consensus: { strategy: 9 as never } }, status.INVALID_ARGUMENT, /strategy/],
    ['negative weight', { judges: [{ ...THREE[0]!, weight: -1 }] }, status.INVALID_ARGUMENT, /weight/],
    ['NaN weight', { judges: [{ ...THREE[0]!, weight: Number.NaN }] }, status.INVALID_ARGUMENT, /weight/],
    ['threshold above 1', { judges: THREE, consensus: { strategy: 0, threshold: 1.5 } }, status.INVALID_ARGUMENT, /threshold/],
    ['n of 0', { judges: THREE, consensus: { strategy: 0, n: 0 } }, status.INVALID_ARGUMENT, /consensus\.n/],
    ['template that does not parse', { judges: [{ ...THREE[0]!, input_template: 'J_HIGH {{#if output}}' }] }, status.INVALID_ARGUMENT, /input_template/],
    ['context_json not JSON', { judges: THREE, context_json: '{nope' }, status.INVALID_ARGUMENT, /context_json/],
  ];
  for (const [name, req, code, message] of cases) {
    const r = await validate(req);
    t.is(r.code, code, `${name}: ${r.details}`);
    t.regex(r.details ?? '', message, name);
  }
  t.is(await executionCount(), before, 'no judge execution was started for a refused request');
});

test.serial('tenant scoping: another tenant cannot use these judges', async (t) => {
  const other = await tokenFor(`other-${randomUUID().slice(0, 6)}`);
  const md = new Metadata();
  md.set('authorization', `Bearer ${other}`);
  const code = await new Promise<number>((resolve) => {
    grpc.validateWithJudges({ output: 'x', task: 'y', judges: [THREE[0]!], context_json: '' }, md, { deadline: Date.now() + 30_000 }, (err) => resolve(err ? err.code : status.OK));
  });
  t.is(code, status.NOT_FOUND);
});

test.serial('a cancelled call (deadline exceeded) cancels the judge executions still running', async (t) => {
  // A 10 s deadline: long enough that the judge's execution exists before it passes on a loaded machine.
  const r = await validate({ judges: [{ agent_id: 'judge-slow', input_template: 'J_SLOW {{output}}', weight: 1 }] }, 10_000);
  t.is(r.code, status.DEADLINE_EXCEEDED, r.details);
  const deadline = Date.now() + 60_000;
  let row: { status: string } | undefined;
  for (;;) {
    row = (await node.db.query<{ status: string }>("SELECT status FROM executions WHERE tenant_id = $1 AND input LIKE 'J_SLOW%'", [tenant])).rows[0];
    if ((row && row.status === 'cancelled') || Date.now() > deadline) break;
    await new Promise((res) => setTimeout(res, 100));
  }
  t.is(row?.status, 'cancelled', 'the slow judge was cancelled, not left running for 300 s');
});
