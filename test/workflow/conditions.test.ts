// The 17 transition conditions of seed 002: a match and a non-match for each, their boundaries, absent = always,
// and first match wins.
import test from 'ava';
import { conditionMatches, selectTransition } from '../../src/workflow/conditions.ts';
import type { StateOutcome } from '../../src/workflow/engine/runner-types.ts';
import type { Transition } from '../../src/workflow/manifest/types.ts';
import { buildScope } from '../../src/workflow/template/scope.ts';

const scope = buildScope({
  executionId: 'e-1',
  input: {},
  context: {},
  storage: { shared: {} },
  blackboard: { build: { status: 'success', output: { stdout: 'ok', stderr: '', exit_code: 0 } } },
});

const sys = (exit_code: number, status: StateOutcome['status'] = exit_code === 0 ? 'success' : 'failed'): StateOutcome => ({ kind: 'System', status, exit_code });
const agent = (score: number, confidence = 0.9, status: StateOutcome['status'] = 'success'): StateOutcome => ({ kind: 'Agent', status, score, confidence });
const judges = (score: number, confidence: number, scores: number[], threshold = 0.7): StateOutcome => ({
  kind: 'ParallelAgents', status: 'success', score, confidence, consensus: { score, confidence, threshold, scores },
});
const human = (response: string): StateOutcome => ({ kind: 'Human', status: 'success', response });

const tr = (t: Partial<Transition> & Pick<Transition, 'condition'>): Transition => ({ target: 'next', ...t });
const m = (t: Transition, o: StateOutcome): boolean => conditionMatches(t, o, scope);

test('always (and an absent condition) matches anything', (t) => {
  t.true(m(tr({ condition: 'always' }), sys(1)));
  t.true(m(tr({ condition: 'always' }), human('whatever')));
  t.true(m({ target: 'next' } as Transition, agent(0)));
});

test('on_success / on_failure follow the status', (t) => {
  t.true(m(tr({ condition: 'on_success' }), sys(0)));
  t.false(m(tr({ condition: 'on_success' }), sys(2)));
  t.true(m(tr({ condition: 'on_failure' }), sys(2)));
  t.false(m(tr({ condition: 'on_failure' }), agent(0.9)));
  t.true(m(tr({ condition: 'on_failure' }), { kind: 'Subworkflow', status: 'failed' }));
});

test('exit_code_zero / exit_code_non_zero / exit_code with value; no exit code never matches', (t) => {
  t.true(m(tr({ condition: 'exit_code_zero' }), sys(0)));
  t.false(m(tr({ condition: 'exit_code_zero' }), sys(1)));
  t.true(m(tr({ condition: 'exit_code_non_zero' }), sys(137)));
  t.false(m(tr({ condition: 'exit_code_non_zero' }), sys(0)));
  t.false(m(tr({ condition: 'exit_code_zero' }), agent(1)));
  t.false(m(tr({ condition: 'exit_code_non_zero' }), agent(1)));
  t.true(m(tr({ condition: 'exit_code', value: '2' }), sys(2)));
  t.false(m(tr({ condition: 'exit_code', value: '2' }), sys(3)));
  t.true(m(tr({ condition: 'exit_code', value: '-1' }), sys(-1)));
  t.false(m(tr({ condition: 'exit_code', value: '2x' }), sys(2)));
  t.false(m(tr({ condition: 'exit_code', value: '0' }), agent(1)));
});

test('score_above is strict >, score_below strict <', (t) => {
  t.true(m(tr({ condition: 'score_above', threshold: 0.8 }), agent(0.81)));
  t.false(m(tr({ condition: 'score_above', threshold: 0.8 }), agent(0.8)));
  t.true(m(tr({ condition: 'score_below', threshold: 0.5 }), agent(0.49)));
  t.false(m(tr({ condition: 'score_below', threshold: 0.5 }), agent(0.5)));
  t.false(m(tr({ condition: 'score_above', threshold: 0.1 }), sys(0)), 'no score');
});

test('score_between is inclusive at both ends', (t) => {
  const between = tr({ condition: 'score_between', min: 0.5, max: 0.8 });
  t.true(m(between, agent(0.5)));
  t.true(m(between, agent(0.8)));
  t.true(m(between, agent(0.65)));
  t.false(m(between, agent(0.49)));
  t.false(m(between, agent(0.81)));
});

test('confidence_above is strict >', (t) => {
  t.true(m(tr({ condition: 'confidence_above', threshold: 0.7 }), agent(0.1, 0.71)));
  t.false(m(tr({ condition: 'confidence_above', threshold: 0.7 }), agent(0.9, 0.7)));
});

test('consensus needs score >= threshold and confidence >= agreement (both inclusive)', (t) => {
  const c = tr({ condition: 'consensus', threshold: 0.7, agreement: 0.6 });
  t.true(m(c, judges(0.7, 0.6, [0.7, 0.7])));
  t.false(m(c, judges(0.69, 0.9, [0.69])));
  t.false(m(c, judges(0.9, 0.59, [0.9])));
  // Without its own threshold the transition uses the state's consensus threshold; without agreement, any confidence.
  t.true(m(tr({ condition: 'consensus' }), judges(0.75, 0.1, [0.75], 0.75)));
  t.false(m(tr({ condition: 'consensus' }), judges(0.74, 1, [0.74], 0.75)));
});

test('all_approved: every judge at or above the consensus threshold; any_rejected: at least one below', (t) => {
  t.true(m(tr({ condition: 'all_approved' }), judges(0.8, 0.9, [0.7, 0.9, 0.8])));
  t.false(m(tr({ condition: 'all_approved' }), judges(0.8, 0.9, [0.69, 0.9, 0.8])));
  t.true(m(tr({ condition: 'any_rejected' }), judges(0.8, 0.9, [0.69, 0.9, 0.8])));
  t.false(m(tr({ condition: 'any_rejected' }), judges(0.8, 0.9, [0.7, 0.9, 0.8])));
  // A transition threshold overrides the state's.
  t.false(m(tr({ condition: 'all_approved', threshold: 0.85 }), judges(0.8, 0.9, [0.7, 0.9, 0.8])));
  t.false(m(tr({ condition: 'all_approved' }), judges(0, 0, [])), 'no judge, nothing approved');
  t.false(m(tr({ condition: 'all_approved' }), agent(1)), 'not a ParallelAgents outcome');
});

test('input_equals is exact', (t) => {
  t.true(m(tr({ condition: 'input_equals', value: 'ship it' }), human('ship it')));
  t.false(m(tr({ condition: 'input_equals', value: 'ship it' }), human('Ship it')));
  t.false(m(tr({ condition: 'input_equals', value: 'ship it' }), human(' ship it')));
  t.false(m(tr({ condition: 'input_equals', value: 'x' }), sys(0)));
});

test('input_equals_yes: yes / approve / approved / true in any case; input_equals_no: no / reject / rejected / false', (t) => {
  for (const yes of ['yes', 'YES', 'Approve', 'approved', 'True', ' yes ']) {
    t.true(m(tr({ condition: 'input_equals_yes' }), human(yes)), yes);
    t.false(m(tr({ condition: 'input_equals_no' }), human(yes)), yes);
  }
  for (const no of ['no', 'NO', 'Reject', 'rejected', 'FALSE']) {
    t.true(m(tr({ condition: 'input_equals_no' }), human(no)), no);
    t.false(m(tr({ condition: 'input_equals_yes' }), human(no)), no);
  }
  t.false(m(tr({ condition: 'input_equals_yes' }), human('yes please')));
  t.false(m(tr({ condition: 'input_equals_no' }), human('nope')));
  t.false(m(tr({ condition: 'input_equals_yes' }), sys(0)));
});

test('custom renders the expression against the scope and evaluates it', (t) => {
  t.true(m(tr({ condition: 'custom', expression: '{{build.output.exit_code}} == 0' }), sys(0)));
  t.false(m(tr({ condition: 'custom', expression: '{{build.output.exit_code}} != 0' }), sys(0)));
  t.false(m(tr({ condition: 'custom', expression: '{{missing.output}} == 1' }), sys(0)));
  t.false(m(tr({ condition: 'custom', expression: 'not ( valid' }), sys(0)));
  t.false(m(tr({ condition: 'custom' }), sys(0)), 'no expression');
});

test('selectTransition: first match wins, in order; undefined when nothing matches', (t) => {
  const rules: Transition[] = [
    { condition: 'score_above', threshold: 0.9, target: 'publish' },
    { condition: 'score_between', min: 0.5, max: 0.9, target: 'revise', feedback: 'improve: {{write.output}}' },
    { condition: 'on_failure', target: 'alert' },
    { condition: 'always', target: 'fallback' },
  ];
  t.is(selectTransition(rules, agent(0.95), scope)?.target, 'publish');
  t.is(selectTransition(rules, agent(0.9), scope)?.target, 'revise');
  t.is(selectTransition(rules, agent(0.5), scope)?.feedback, 'improve: {{write.output}}');
  t.is(selectTransition(rules, agent(0.2, 0.5, 'failed'), scope)?.target, 'alert');
  t.is(selectTransition(rules, agent(0.2), scope)?.target, 'fallback');
  // Two matching rules: the earlier one.
  t.is(selectTransition([{ condition: 'on_success', target: 'a' }, { condition: 'exit_code_zero', target: 'b' }], sys(0), scope)?.target, 'a');
  t.is(selectTransition(rules.slice(0, 2), agent(0.1), scope), undefined);
  t.is(selectTransition([], agent(0.1), scope), undefined);
});

test('bounds tolerate floating-point drift of computed scores (0.1 + 0.2 is 0.3)', (t) => {
  const drifted = agent(0.1 + 0.2, 0.1 + 0.2);
  t.true(m(tr({ condition: 'score_between', min: 0, max: 0.3 }), drifted));
  t.false(m(tr({ condition: 'score_above', threshold: 0.3 }), drifted));
  t.false(m(tr({ condition: 'confidence_above', threshold: 0.3 }), drifted));
  t.true(m(tr({ condition: 'consensus', threshold: 0.7, agreement: 0.8 }), judges((0.8 + 0.6) / 2, 0.7999999999999999, [0.8, 0.6])));
});
