// Issue 14: a tenant's JSON Schema `pattern` runs on the main thread for every payload; `(a+)+$` in a workflow's
// input_schema held the event loop. Such patterns are refused when the schema compiles (deploy → 422), ordinary
// ones still validate.
import test from 'ava';
import { assertSafePattern, UnsafePatternError } from '../../src/util/safe-pattern.ts';
import { tenantAjv } from '../../src/util/tenant-ajv.ts';
import { parseWorkflowManifest } from '../../src/workflow/manifest/parse.ts';

const unsafe = ['(a+)+$', '^(a*)*b', '(\\w+\\s?)*$', '([a-z]+\\.)+[a-z]+$', '((ab)*c)+', '(?:x+y?)+', '(a{1,3}){5,}', '(x+x+)+y'];
const safe = ['^[a-z0-9-]+$', '^(foo|bar)+$', '^\\d{4}-\\d{2}-\\d{2}$', '^(\\+\\d{1,3})?\\d+$', '[(]a+[)]+', '\\(a+\\)+', '^(?:v\\d+)?$', '^[^@]+@[^@]+$'];

for (const p of unsafe) {
  test(`refused: ${p}`, (t) => {
    t.throws(() => assertSafePattern(p), { instanceOf: UnsafePatternError });
    t.throws(() => tenantAjv({ strict: false }).compile({ type: 'string', pattern: p }), { message: /refused/ });
  });
}

for (const p of safe) {
  test(`accepted: ${p}`, (t) => {
    t.notThrows(() => assertSafePattern(p));
    t.notThrows(() => tenantAjv({ strict: false }).compile({ type: 'string', pattern: p }));
  });
}

test('patternProperties are guarded too, and long patterns refused', (t) => {
  t.throws(() => tenantAjv({ strict: false }).compile({ type: 'object', patternProperties: { '(a+)+$': { type: 'string' } } }), { message: /refused/ });
  t.throws(() => assertSafePattern('a'.repeat(1025)), { instanceOf: UnsafePatternError });
});

test('a safe pattern still validates what it should', (t) => {
  const v = tenantAjv({ strict: false }).compile({ type: 'string', pattern: '^(foo|bar)+$' });
  t.true(v('foobar'));
  t.false(v('baz'));
});

test('the attack: a workflow whose input_schema carries (a+)+$ is refused at deploy, naming the field', (t) => {
  const yaml = `apiVersion: orch.dev/v1
kind: Workflow
metadata:
  name: redos
  version: 1.0.0
  input_schema:
    type: object
    properties: { title: { type: string, pattern: "(a+)+$" } }
spec:
  initial_state: done
  states:
    done:
      kind: System
      command: 'update_context {"x": 1}'
      transitions: []
`;
  const r = parseWorkflowManifest(yaml);
  t.false(r.ok, 'the manifest is refused');
  t.regex(JSON.stringify(r), /input_schema/);
  t.true(parseWorkflowManifest(yaml.replace('(a+)+$', '^[a-z]+$')).ok, 'the same manifest with a safe pattern deploys');
  t.regex(JSON.stringify(r), /refused/);
});
