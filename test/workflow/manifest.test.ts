// parseWorkflowManifest: the invalid-manifest suite (test/workflow/fixtures/invalid/, each file names in a comment
// the field its one error must name), a valid manifest with every state kind and every condition type parsed with
// the defaults of seed 002 filled in, unit forms, object input, and the served JSON Schema.
import test from 'ava';
import { readFileSync } from 'node:fs';
import { Ajv } from 'ajv';
import { parse as parseYaml } from 'yaml';
import { parseWorkflowDuration, parseWorkflowManifest, WORKFLOW_DEFAULTS } from '../../src/workflow/manifest/parse.ts';
import { WORKFLOW_MANIFEST_SCHEMA_KEY, workflowManifestSchema } from '../../src/workflow/manifest/schema.ts';
import { parseWorkflowYaml } from '../../src/workflow/manifest/yaml.ts';
import { invalidFixtures } from './manifest-fixtures.ts';
import { CONDITION_TYPES, type WorkflowManifest } from '../../src/workflow/manifest/types.ts';

const VALID = new URL('./fixtures/valid/', import.meta.url);

function parsed(text: string): WorkflowManifest {
  const r = parseWorkflowManifest(text);
  if (!r.ok) throw new Error(JSON.stringify(r.errors));
  return r.manifest;
}

const MINIMAL = `apiVersion: orch.dev/v1
kind: Workflow
metadata: { name: tiny, version: 0.1.0 }
spec:
  initial_state: only
  states:
    only: { kind: System, command: "echo hi", transitions: [] }
`;

test('the invalid suite has at least 30 manifests', (t) => {
  t.true(invalidFixtures().length >= 30, `only ${invalidFixtures().length}`);
});

for (const fx of invalidFixtures()) {
  test(`invalid ${fx.file}: refused, naming ${fx.field}`, (t) => {
    const r = parseWorkflowManifest(fx.text);
    if (r.ok) return t.fail('it parsed');
    // Each fixture is valid but for one mistake, so exactly one error, and it names the field.
    t.is(r.errors.length, 1, JSON.stringify(r.errors));
    t.is(r.errors[0]!.field, fx.field);
    t.true(r.errors[0]!.message.includes(fx.message), `"${r.errors[0]!.message}" should say "${fx.message}"`);
  });
}

test('a manifest with every state kind and all 17 condition types parses, defaults filled', (t) => {
  const text = readFileSync(new URL('every-kind.yaml', VALID), 'utf8');
  const m = parsed(text);
  const s = m.spec.states;
  t.deepEqual(Object.values(s).map((x) => x.kind).sort(), ['Agent', 'ContainerRun', 'Human', 'ParallelAgents', 'ParallelContainerRun', 'Subworkflow', 'Subworkflow', 'System', 'System'].sort());
  const used = new Set(Object.values(s).flatMap((x) => x.transitions.map((tr) => tr.condition)));
  t.deepEqual([...used].sort(), [...CONDITION_TYPES].sort());
  t.is(m.spec.max_total_transitions, 50);
  t.deepEqual(m.spec.context, { greeting: 'hello', retries: 3 });
  t.deepEqual(m.metadata.labels, { team: 'platform', tier: '2' }, 'a number written as a label value stays text');
  t.deepEqual(m.spec.storage, {
    workspace: { storage_class: 'ephemeral', ttl_hours: 24, size_limit_mb: 512 },
    shared_volumes: [
      { name: 'cache', storage_class: 'persistent', volume_id: '6f1c2a0e-9b1d-4c11-8a55-0c2d3e4f5a6b' },
      { name: 'scratch', storage_class: 'ephemeral' },
    ],
  });

  t.deepEqual(s.plan, {
    kind: 'Agent',
    agent: 'planner',
    input: 'Plan work on {{input.repo}}',
    isolation: 'inherit',
    max_state_visits: 5,
    timeout_seconds: 300,
    volumes: [{ volume: '{{workflow.storage.workspace}}', mount_path: '/workspace', access_mode: 'read-write' }],
    transitions: [
      { condition: 'score_above', threshold: 0.8, target: 'build' },
      { condition: 'score_between', min: 0.5, max: 0.8, target: 'plan', feedback: 'Improve: {{plan.output}}' },
      { condition: 'confidence_above', threshold: 0.9, target: 'build' },
      { condition: 'score_below', threshold: 0.5, target: 'approve' },
      { condition: 'always', target: 'approve' },
    ],
  });
  t.like(s.build, { kind: 'System', command: 'make build', env: { PORT: '8080' }, workdir: '/workspace', timeout_seconds: 300 });
  t.deepEqual(s.build?.transitions[1], { condition: 'exit_code', value: '2', target: 'approve' }, 'exit code value as text');
  t.deepEqual(s.test, {
    kind: 'ContainerRun',
    image: 'alpine:3.20',
    image_pull_policy: 'IfNotPresent',
    command: ['sh', '-c', 'echo {{input.repo}}'],
    shell: false,
    env: {},
    workdir: '/workspace',
    volumes: [
      { name: 'workspace', mount_path: '/workspace', read_only: false },
      { name: 'cache', mount_path: '/cache', read_only: true },
    ],
    resources: { cpu: 500, memory_bytes: 512 * 1024 ** 2, timeout_seconds: 3600 },
    retry: { max_attempts: 3, backoff_seconds: 10 },
    max_state_visits: 5,
    timeout_seconds: 300,
    transitions: [
      { condition: 'on_success', target: 'matrix' },
      { condition: 'on_failure', target: 'approve' },
    ],
  });
  const matrix = s.matrix;
  if (matrix?.kind !== 'ParallelContainerRun') return t.fail();
  t.is(matrix.completion, 'any_succeed');
  t.deepEqual(matrix.steps.map((x) => [x.name, x.shell, x.image_pull_policy, x.resources]), [
    ['lint', false, 'IfNotPresent', { memory_bytes: 2 * 1024 ** 3, timeout_seconds: 300 }],
    ['unit', true, 'IfNotPresent', { timeout_seconds: 300 }],
  ]);
  const review = s.review;
  if (review?.kind !== 'ParallelAgents') return t.fail();
  t.deepEqual(review.agents, [
    { agent: 'judge-a', weight: 1, timeout_seconds: 60, poll_interval_ms: 500 },
    { agent: 'judge-b', weight: 2, timeout_seconds: 30, poll_interval_ms: 250, input: '{{build.output.stdout}}' },
    { agent: 'judge-c', weight: 1, timeout_seconds: 60, poll_interval_ms: 500 },
  ]);
  t.deepEqual(review.consensus, {
    strategy: 'best_of_n',
    threshold: 0.7,
    min_agreement_confidence: 0.6, // from the `agreement` alias
    n: 2,
    min_judges_required: 1,
    confidence_weighting: { agreement_factor: 0.7, self_confidence_factor: 0.3 },
  });
  const approve = s.approve;
  if (approve?.kind !== 'Human') return t.fail();
  t.is(approve.timeout_seconds, undefined, 'a Human state without timeout waits indefinitely');
  t.is(approve.default_response, 'no');
  t.like(s.child, { kind: 'Subworkflow', workflow_id: 'release', mode: 'blocking', result_key: 'release_result' });
  t.like(s.notify, { kind: 'Subworkflow', workflow_id: 'notifier', mode: 'fire_and_forget' });
  t.is(s.done?.kind === 'System' ? s.done.command : '', 'update_blackboard {"finished": true}');
});

test('a minimal manifest gets the workflow-level defaults', (t) => {
  const m = parsed(MINIMAL);
  t.deepEqual(m, {
    apiVersion: 'orch.dev/v1',
    kind: 'Workflow',
    metadata: { name: 'tiny', version: '0.1.0' },
    spec: {
      initial_state: 'only',
      max_total_transitions: WORKFLOW_DEFAULTS.max_total_transitions,
      context: {},
      states: { only: { kind: 'System', command: 'echo hi', env: {}, workdir: '/workspace', volumes: [], max_state_visits: 5, timeout_seconds: 300, transitions: [] } },
    },
  });
});

test('the ceilings themselves are accepted: 100 transitions, 20 visits', (t) => {
  const m = parsed(MINIMAL.replace('  initial_state: only', '  initial_state: only\n  max_total_transitions: 100').replace('transitions: [] }', 'transitions: [], max_state_visits: 20 }'));
  t.is(m.spec.max_total_transitions, 100);
  t.is(m.spec.states.only?.max_state_visits, 20);
});

test('an object (a JSON body) parses like its YAML text', (t) => {
  const text = readFileSync(new URL('every-kind.yaml', VALID), 'utf8');
  const obj = parseYaml(text) as Record<string, unknown>;
  (obj.metadata as { labels: Record<string, string> }).labels.tier = '2';
  ((obj.spec as { states: Record<string, { env?: Record<string, string> }> }).states.build!.env!).PORT = '8080';
  t.deepEqual(parsed(obj as never), parsed(text));
  t.false(parseWorkflowManifest(42).ok);
  t.deepEqual(parseWorkflowManifest('   '), { ok: false, errors: [{ field: '(root)', message: 'the manifest is empty' }] });
});

test('every mistake is reported at once, each with its field', (t) => {
  const r = parseWorkflowManifest(`apiVersion: orch.dev/v1
kind: Workflow
metadata: { name: many, version: 1.0.0 }
spec:
  initial_state: nowhere
  max_total_transitions: 500
  states:
    a:
      kind: System
      command: x
      timeout: soon
      transitions: [ { target: b }, { condition: custom, target: a } ]
`);
  if (r.ok) return t.fail();
  t.deepEqual(r.errors.map((e) => e.field).sort(), [
    'spec.initial_state',
    'spec.max_total_transitions',
    'spec.states.a.timeout',
    'spec.states.a.transitions[0].target',
    'spec.states.a.transitions[1].expression',
  ]);
});

test('durations: 300s, 5m, 1h and seconds; other forms refused', (t) => {
  t.is(parseWorkflowDuration('300s'), 300);
  t.is(parseWorkflowDuration('5m'), 300);
  t.is(parseWorkflowDuration('1h'), 3600);
  t.is(parseWorkflowDuration('1.5m'), 90);
  t.is(parseWorkflowDuration(45), 45);
  t.is(parseWorkflowDuration('0s'), undefined);
  t.is(parseWorkflowDuration('0s', true), 0);
  for (const bad of ['5', '5 minutes', '1d', 'm5', '', '-3s']) t.is(parseWorkflowDuration(bad), undefined, bad);
});

test(`the served schema ${WORKFLOW_MANIFEST_SCHEMA_KEY} is draft-07 and accepts the valid manifests`, (t) => {
  const validate = new Ajv({ strict: false }).compile(workflowManifestSchema);
  // Loaded as the parser loads it: scalars the schema wants as text keep their written spelling.
  const every = parseWorkflowYaml(readFileSync(new URL('every-kind.yaml', VALID), 'utf8'));
  if (!every.ok) return t.fail();
  t.true(validate(every.value), JSON.stringify(validate.errors));
  t.true(validate(parseYaml(MINIMAL)));
  t.false(validate(parseYaml(MINIMAL.replace('kind: Workflow', 'kind: Agent'))));
  t.is(workflowManifestSchema.$schema, 'http://json-schema.org/draft-07/schema#');
});

test('result_key on a fire_and_forget Subworkflow is accepted and ignored (seed 002: blocking only, "ignored otherwise")', (t) => {
  const m = parsed(`apiVersion: orch.dev/v1
kind: Workflow
metadata: { name: fire, version: 0.1.0 }
spec:
  initial_state: start
  states:
    start: { kind: Subworkflow, workflow_id: child, mode: fire_and_forget, result_key: child_result, transitions: [] }
`);
  const s = m.spec.states.start;
  t.like(s, { kind: 'Subworkflow', mode: 'fire_and_forget' });
  t.false('result_key' in (s as object));
});
