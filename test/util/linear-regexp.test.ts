// Issue 14: tenant JSON Schema `pattern`s run on the main thread for every payload. The syntactic guard that refused
// `(a+)+$` let overlapping alternatives such as `(a|aa)+$` through, and V8 backtracks on them exponentially. Patterns
// now run on RE2's linear-time engine (re2js): every pattern answers in time linear in the input.
import test from 'ava';
import { linearRegExp, MAX_PATTERN_LENGTH, UnsupportedPatternError } from '../../src/util/linear-regexp.ts';
import { tenantAjv } from '../../src/util/tenant-ajv.ts';
import { parseWorkflowManifest } from '../../src/workflow/manifest/parse.ts';

// Each backtracks exponentially in V8 on `aaaa…!` (or `xxxx…!`); `(a|aa)+$` passed the old guard.
const hostile = ['(a|aa)+$', '(a+)+$', '^(a*)*b$', '^(\\w+\\s?)*$', '([a-z]+\\.)+[a-z]+$', '(?:x+y?)+$', '(x+x+)+y'];
const LONG = 'a'.repeat(50_000) + '!';

for (const p of hostile) {
  test(`linear time: ${p} against ${LONG.length} characters answers well under 1 s, through the tenant Ajv`, (t) => {
    const validate = tenantAjv({ strict: false }).compile({ type: 'string', pattern: p });
    for (const input of [LONG, 'x'.repeat(50_000) + '!']) {
      const t0 = performance.now();
      const ok = validate(input);
      const took = performance.now() - t0;
      t.false(ok, `${p} does not match`);
      t.true(took < 1000, `${p}: ${Math.round(took)} ms`);
    }
  });
}

test('ordinary patterns validate as before (JavaScript spellings included)', (t) => {
  const cases: Array<[string, string, boolean]> = [
    ['^[a-z0-9-]+$', 'abc-1', true], ['^[a-z0-9-]+$', 'ABC', false],
    ['^(foo|bar)+$', 'foobarfoo', true], ['^(foo|bar)+$', 'baz', false],
    ['^\\d{4}-\\d{2}-\\d{2}$', '2026-11-26', true], ['^\\d{4}-\\d{2}-\\d{2}$', '2026-1-26', false],
    ['^(?<year>\\d{4})$', '2026', true], ['^a\\/b$', 'a/b', true], ['^\\p{L}+$', 'Grüße', true], ['^\\p{L}+$', 'a1', false],
    ['(a|aa)+$', 'aaaa', true], ['^[^@]+@[^@]+$', 'a@b', true],
  ];
  for (const [p, input, want] of cases) t.is(tenantAjv({ strict: false }).compile({ type: 'string', pattern: p })(input), want, `${p} on ${input}`);
  t.true(linearRegExp('^abc$', 'i').test('ABC'));
});

test('what RE2 cannot run (lookaround, backreferences) and over-long patterns are refused when the schema compiles, saying why', (t) => {
  for (const p of ['(?=a)b', '(?!a)b', '(?<=a)b', '(a)\\1']) {
    t.throws(() => linearRegExp(p), { instanceOf: UnsupportedPatternError, message: /linear-time engine, RE2: no lookahead, lookbehind or backreferences/ });
    t.throws(() => tenantAjv({ strict: false }).compile({ type: 'string', pattern: p }), { message: /not accepted/ });
  }
  t.throws(() => tenantAjv({ strict: false }).compile({ type: 'object', patternProperties: { '(?=x)': { type: 'string' } } }), { message: /not accepted/ });
  t.throws(() => linearRegExp('a'.repeat(MAX_PATTERN_LENGTH + 1)), { message: /longer than 1024/ });
  t.throws(() => linearRegExp('a', 'v'), { message: /flag "v"/ });
});

test('patternProperties run on RE2 too', (t) => {
  const v = tenantAjv({ strict: false }).compile({ type: 'object', patternProperties: { '(a|aa)+$': { type: 'integer' } } });
  const t0 = performance.now();
  t.true(v({ [LONG]: 'not checked: the key does not match' }));
  t.false(v({ aaaa: 'x' }));
  t.true(performance.now() - t0 < 1000);
});

test('a workflow whose input_schema carries (a|aa)+$ or (a+)+$ deploys (it is harmless now); a lookahead is refused naming the field', (t) => {
  const yaml = (pattern: string) => `apiVersion: orch.dev/v1
kind: Workflow
metadata:
  name: redos
  version: 1.0.0
  input_schema:
    type: object
    properties: { title: { type: string, pattern: ${JSON.stringify(pattern)} } }
spec:
  initial_state: done
  states:
    done:
      kind: System
      command: 'update_context {"x": 1}'
      transitions: []
`;
  t.true(parseWorkflowManifest(yaml('(a|aa)+$')).ok);
  t.true(parseWorkflowManifest(yaml('(a+)+$')).ok);
  const r = parseWorkflowManifest(yaml('^(?=x)'));
  t.false(r.ok);
  t.regex(JSON.stringify(r), /input_schema/);
  t.regex(JSON.stringify(r), /no lookahead/);
});
