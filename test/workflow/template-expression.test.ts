// `custom` condition expressions: rendered with Handlebars first, then evaluated by the jsep-based evaluator.
// Operators, precedence, number against string comparison, truthiness, and malformed input (false plus a reason).
import test from 'ava';
import { evaluateExpression, evaluateExpressionDetailed } from '../../src/workflow/template/render.ts';
import { buildScope } from '../../src/workflow/template/scope.ts';
import { evaluateRenderedExpression } from '../../src/workflow/template/expression.ts';

const scope = buildScope({
  executionId: 'e-1',
  input: { mode: 'fast', limit: 10, ok: true, label: 'two words' },
  context: { min_score: 0.8 },
  storage: { shared: {} },
  blackboard: {
    build: { status: 'success', output: { stdout: 'ok', stderr: '', exit_code: 0, duration_ms: 10 } },
    lint: { status: 'failed', output: { stdout: '', stderr: 'bad', exit_code: 3 } },
    write: { status: 'success', output: 'text', score: 0.85 },
  },
});

const ev = (e: string): boolean => evaluateExpression(e, scope);

test('the seed example: {{build.output.exit_code}} == 0', (t) => {
  t.true(ev('{{build.output.exit_code}} == 0'));
  t.false(ev('{{lint.output.exit_code}} == 0'));
  t.true(ev('{{lint.output.exit_code}} != 0'));
});

test('each operator: < > <= >= == != && || !', (t) => {
  t.true(ev('{{write.score}} > 0.8'));
  t.false(ev('{{write.score}} < 0.8'));
  t.true(ev('{{write.score}} >= 0.85'));
  t.true(ev('{{write.score}} <= 0.85'));
  t.false(ev('{{write.score}} > 0.85'));
  t.true(ev('{{write.score}} >= {{workflow.context.min_score}}'));
  t.true(ev('"{{build.status}}" == "success" && {{build.output.exit_code}} == 0'));
  t.true(ev('"{{lint.status}}" == "success" || {{lint.output.exit_code}} == 3'));
  t.false(ev('"{{lint.status}}" == "success" && {{lint.output.exit_code}} == 3'));
  t.true(ev('!("{{lint.status}}" == "success")'));
  t.false(ev('!{{input.ok}}'));
  t.true(ev('!!{{input.ok}}'));
});

test('precedence: ! binds tighter than comparison, comparison than &&, && than ||; parentheses override', (t) => {
  t.true(ev('true || false && false')); // && first: true || (false && false)
  t.false(ev('(true || false) && false'));
  t.true(ev('1 < 2 == true')); // relational before equality
  t.true(ev('!0 && 2 > 1'));
  t.false(ev('!(1 < 2 && 3 > 2) || 5 <= 4'));
  t.true(ev('1 == 1 && 2 == 2 || 0'));
});

test('numbers and strings: numeric text compares as a number; texts compare exactly; bare words are text', (t) => {
  t.true(ev('"10" > 9'));
  t.true(ev('"0" == 0'));
  t.true(ev('10 > "9"'));
  t.true(ev('"10" > "9"')); // both numeric text: numeric
  t.true(ev('"b" > "a"'));
  t.false(ev('"abc" == "ABC"'));
  t.true(ev('{{input.mode}} == "fast"')); // unquoted rendered word is its text
  t.true(ev('"{{input.mode}}" != "slow"'));
  t.false(ev('"fast" == 1'));
  t.true(ev('-1 < 0'));
  t.true(ev('{{input.ok}} == true'));
  t.true(ev('"TRUE" == true'));
  t.true(ev('null == null'));
  t.false(ev('null == 0'));
});

test('truthiness: false, 0, "", "false", "0" and null are false; other values are true', (t) => {
  for (const falsy of ['false', '0', '""', '"false"', '"FALSE"', '"0"', '" "', 'null', '0.0']) t.false(ev(falsy), falsy);
  for (const truthy of ['true', '1', '"yes"', '"0.5"', '-1', 'word']) t.true(ev(truthy), truthy);
});

test('malformed or unsupported expressions are false with a reason, never an exception', (t) => {
  const cases: [string, RegExp][] = [
    ['1 <', /cannot evaluate/],
    ['(1 < 2', /cannot evaluate/],
    ['1 + 1 == 2', /operator \+ is not supported/],
    ['a = 1', /cannot evaluate/],
    ['1 === 1', /operator === is not supported/],
    ['process.exit(1)', /unsupported syntax/],
    ['constructor.constructor("return 1")()', /unsupported syntax/],
    ['[1,2]', /unsupported syntax/],
    ['1 ? 2 : 3', /unsupported syntax/],
    ['"a" < 1', /cannot compare/],
    ['{{input.label}} == "two words"', /cannot evaluate/],
    ['', /empty/],
    ['{{#if}}', /missing value: <template error/],
  ];
  for (const [expression, reason] of cases) {
    const result = evaluateExpressionDetailed(expression, scope);
    t.false(result.value, expression);
    t.regex(result.error ?? '', reason, expression);
  }
});

test('a missing key makes the expression false and names the key', (t) => {
  const result = evaluateExpressionDetailed('{{deploy.output.exit_code}} == 0', scope);
  t.false(result.value);
  t.regex(result.error ?? '', /<missing deploy\.output\.exit_code: state "deploy" has not completed>/);
  t.false(ev('{{deploy.status}} == "failed" || false'));
});

test('evaluateRenderedExpression on plain text', (t) => {
  t.deepEqual(evaluateRenderedExpression('3 >= 3'), { value: true });
  t.deepEqual(evaluateRenderedExpression('3 > 3'), { value: false });
});
