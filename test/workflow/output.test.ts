// output_template + output_schema (rendering, the seed's coercion table, validation, failures naming field and
// value) and input_schema validation of the caller's payload.
import test from 'ava';
import { coerceOutputValue, renderFinalOutput } from '../../src/workflow/output.ts';
import { validateWorkflowInput } from '../../src/workflow/input.ts';
import type { WorkflowManifest } from '../../src/workflow/manifest/types.ts';
import { buildScope } from '../../src/workflow/template/scope.ts';

function manifest(metadata: Partial<WorkflowManifest['metadata']>): WorkflowManifest {
  return {
    apiVersion: 'orch.dev/v1',
    kind: 'Workflow',
    metadata: { name: 'wf', version: '1.0.0', ...metadata },
    spec: { initial_state: 'a', max_total_transitions: 50, context: {}, states: {} },
  };
}

const scope = buildScope({
  executionId: 'e-1',
  input: { repo: 'acme/app' },
  context: {},
  storage: { shared: {} },
  blackboard: {
    build: { status: 'success', output: { stdout: '42\n', stderr: '', exit_code: 0, duration_ms: 1500 } },
    report: { status: 'success', output: '{"files": 3, "ok": true}', score: 0.875 },
    list: { status: 'success', output: '["a","b"]' },
  },
});

test('no output_template: no final output; template without schema: every value a string', (t) => {
  t.deepEqual(renderFinalOutput(manifest({}), scope), { ok: true, value: null });
  const r = renderFinalOutput(manifest({ output_template: { code: '{{build.output.exit_code}}', repo: '{{input.repo}}', missing: '{{deploy.output}}' } }), scope);
  t.deepEqual(r, { ok: true, value: { code: '0', repo: 'acme/app', missing: '<missing deploy.output: state "deploy" has not completed>' } });
});

test('each value is coerced by its schema type and the object validated', (t) => {
  const m = manifest({
    output_template: {
      summary: 'built {{input.repo}}',
      answer: '{{build.output.stdout}}',
      duration: '{{build.output.duration_ms}}',
      score: '{{report.score}}',
      ok: '{{build.output.exit_code}} is zero? {{#if build.output.exit_code}}false{{else}}true{{/if}}',
      passed: '{{#if report.output.ok}}true{{else}}false{{/if}}',
      details: '{{report.output}}',
      items: '{{list.output}}',
      untyped: '{{build.output.exit_code}}',
    },
    output_schema: {
      type: 'object',
      required: ['summary', 'answer'],
      properties: {
        summary: { type: 'string' },
        answer: { type: 'integer' },
        duration: { type: 'number' },
        score: { type: 'number', minimum: 0, maximum: 1 },
        ok: { type: 'boolean' },
        passed: { type: 'boolean' },
        details: { type: 'object', properties: { files: { type: 'integer' } } },
        items: { type: 'array', items: { type: 'string' } },
      },
    },
  });
  const r = renderFinalOutput(m, scope);
  t.deepEqual(r, {
    ok: true,
    value: {
      summary: 'built acme/app',
      answer: 42,
      duration: 1500,
      score: 0.875,
      ok: false, // "0 is zero? true" is not the text `true`
      passed: true,
      details: { files: 3, ok: true },
      items: ['a', 'b'],
      untyped: '0',
    },
  });
});

test('coercion table: string as is, integer / number strict, boolean only for the text true, object / array JSON', (t) => {
  t.deepEqual(coerceOutputValue('f', 'string', ' 12 '), { ok: true, value: ' 12 ' });
  t.deepEqual(coerceOutputValue('f', 'integer', '-7'), { ok: true, value: -7 });
  t.deepEqual(coerceOutputValue('f', 'integer', ' 12\n'), { ok: true, value: 12 });
  t.deepEqual(coerceOutputValue('f', 'number', '1.5e3'), { ok: true, value: 1500 });
  t.deepEqual(coerceOutputValue('f', 'number', '.25'), { ok: true, value: 0.25 });
  t.deepEqual(coerceOutputValue('f', 'boolean', 'true'), { ok: true, value: true });
  t.deepEqual(coerceOutputValue('f', 'boolean', 'True'), { ok: true, value: false });
  t.deepEqual(coerceOutputValue('f', 'boolean', 'yes'), { ok: true, value: false });
  t.deepEqual(coerceOutputValue('f', 'object', '{"a":[1]}'), { ok: true, value: { a: [1] } });
  t.deepEqual(coerceOutputValue('f', 'array', '[1,{"b":2}]'), { ok: true, value: [1, { b: 2 }] });
  t.deepEqual(coerceOutputValue('f', undefined, 'raw'), { ok: true, value: 'raw' });
});

test('a coercion failure names the field and the value', (t) => {
  const cases: [string, string, RegExp][] = [
    ['integer', '12abc', /^output field "f": value "12abc" is not an integer$/],
    ['integer', '1.5', /value "1.5" is not an integer/],
    ['integer', '', /value "" is not an integer/],
    ['integer', '99999999999999999999', /is not an integer/],
    ['number', '1.2.3', /value "1.2.3" is not a number/],
    ['number', 'NaN', /is not a number/],
    ['number', '0x10', /is not a number/],
    ['object', '{bad json', /value "\{bad json" is not JSON \(object\)/],
    ['object', '[1,2]', /is not a JSON object/],
    ['array', '{"a":1}', /is not a JSON array/],
  ];
  for (const [type, text, reason] of cases) {
    const r = coerceOutputValue('f', type, text);
    t.false(r.ok, `${type} ${text}`);
    if (!r.ok) t.regex(r.error, reason);
  }
  // Through renderFinalOutput: a placeholder in an integer field fails the output, naming field and value.
  const r = renderFinalOutput(manifest({ output_template: { count: '{{deploy.output.count}}' }, output_schema: { type: 'object', properties: { count: { type: 'integer' } } } }), scope);
  t.deepEqual(r, { ok: false, error: 'output field "count": value "<missing deploy.output.count: state \\"deploy\\" has not completed>" is not an integer' });
});

test('schema validation after coercion names the field, the value and the rule', (t) => {
  const base = { output_schema: { type: 'object', required: ['score', 'status'], properties: { score: { type: 'number', maximum: 0.5 }, status: { enum: ['done', 'partial'] } } } };
  const r = renderFinalOutput(manifest({ ...base, output_template: { score: '{{report.score}}', status: 'finished' } }), scope);
  t.false(r.ok);
  if (!r.ok) {
    t.regex(r.error, /output\.score \(value "0\.875"\) must be <= 0\.5/);
    t.regex(r.error, /output\.status \(value "finished"\) must be one of "done", "partial"/);
  }
  const missing = renderFinalOutput(manifest({ ...base, output_template: { score: '0.1' } }), scope);
  t.false(missing.ok);
  if (!missing.ok) t.regex(missing.error, /output\.status is required/);
  const nested = renderFinalOutput(manifest({
    output_template: { details: '{{report.output}}' },
    output_schema: { type: 'object', properties: { details: { type: 'object', properties: { files: { type: 'string' } } } } },
  }), scope);
  t.false(nested.ok);
  if (!nested.ok) t.regex(nested.error, /output\.details\.files \(value "\{\\"files\\": 3, \\"ok\\": true\}"\) must be string/);
  // A schema property typed ["integer", "null"] coerces as integer.
  t.deepEqual(renderFinalOutput(manifest({ output_template: { n: '5' }, output_schema: { type: 'object', properties: { n: { type: ['integer', 'null'] } } } }), scope), { ok: true, value: { n: 5 } });
});

const inputSchema = {
  type: 'object',
  required: ['repo', 'mode'],
  additionalProperties: false,
  properties: {
    repo: { type: 'string', minLength: 3 },
    mode: { enum: ['fast', 'thorough'] },
    retries: { type: 'integer', minimum: 0 },
    ratio: { type: 'number' },
    dry_run: { type: 'boolean' },
    owner: { type: 'object', required: ['email'], properties: { email: { type: 'string', format: 'email' } } },
    paths: { type: 'array', items: { type: 'string' }, minItems: 1 },
  },
};

test('input_schema: a valid payload passes; no schema accepts anything', (t) => {
  t.deepEqual(validateWorkflowInput(manifest({}), { anything: [1, 2] }), { ok: true });
  t.deepEqual(validateWorkflowInput(manifest({}), undefined), { ok: true });
  t.deepEqual(validateWorkflowInput(manifest({ input_schema: inputSchema }), {
    repo: 'acme/app', mode: 'fast', retries: 2, ratio: 0.5, dry_run: true, owner: { email: 'a@b.io' }, paths: ['src'],
  }), { ok: true });
});

test('input_schema: each failure is reported with its field', (t) => {
  const r = validateWorkflowInput(manifest({ input_schema: inputSchema }), {
    repo: 'ab', mode: 'slow', retries: 1.5, ratio: 'x', dry_run: 'yes', owner: { email: 'nope' }, paths: [], extra: 1,
  });
  t.false(r.ok);
  if (r.ok) return;
  const byField = new Map(r.errors.map((e) => [e.field, e.message]));
  t.regex(byField.get('input.repo') ?? '', /must NOT have fewer than 3 characters/);
  t.is(byField.get('input.mode'), 'must be one of "fast", "thorough"');
  t.is(byField.get('input.retries'), 'must be integer');
  t.is(byField.get('input.ratio'), 'must be number');
  t.is(byField.get('input.dry_run'), 'must be boolean');
  t.regex(byField.get('input.owner.email') ?? '', /must match format "email"/);
  t.regex(byField.get('input.paths') ?? '', /must NOT have fewer than 1 items/);
  t.is(byField.get('input.extra'), 'is not an allowed property');
});

test('input_schema: missing required keys (also with no payload) and nested array items', (t) => {
  const none = validateWorkflowInput(manifest({ input_schema: inputSchema }), undefined);
  t.deepEqual(none, { ok: false, errors: [{ field: 'input.repo', message: 'is required' }, { field: 'input.mode', message: 'is required' }] });
  const items = validateWorkflowInput(manifest({ input_schema: inputSchema }), { repo: 'acme', mode: 'fast', paths: ['ok', 7], owner: {} });
  t.false(items.ok);
  if (!items.ok) {
    t.true(items.errors.some((e) => e.field === 'input.paths.1' && e.message === 'must be string'));
    t.true(items.errors.some((e) => e.field === 'input.owner.email' && e.message === 'is required'));
  }
  const wrongType = validateWorkflowInput(manifest({ input_schema: inputSchema }), ['not', 'an', 'object']);
  t.deepEqual(wrongType, { ok: false, errors: [{ field: 'input', message: 'must be object' }] });
});

test('an input_schema that does not compile is reported, not thrown', (t) => {
  const r = validateWorkflowInput(manifest({ input_schema: { type: 'object', properties: { a: { type: 'no-such-type' } } } }), {});
  t.false(r.ok);
  if (!r.ok) t.is(r.errors[0]?.field, 'metadata.input_schema');
});
