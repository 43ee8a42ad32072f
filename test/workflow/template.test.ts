// Templates of seed 002: every template variable resolves from the scope, the helpers, conditionals and loops, no
// HTML escaping, objects as JSON, and the missing-key placeholder (never empty, never an exception).
import test from 'ava';
import fc from 'fast-check';
import { checkTemplate, renderTemplate } from '../../src/workflow/template/render.ts';
import { buildScope, type TemplateScope } from '../../src/workflow/template/scope.ts';

const judgeJson = '{"score": 0.85, "confidence": 0.9, "reasoning": "clear and complete", "suggestions": ["add tests", "trim logs"]}';

function scope(over: Partial<Parameters<typeof buildScope>[0]> = {}): TemplateScope {
  return buildScope({
    executionId: '2b1f5c1e-8d0a-4a57-9c3c-2f4f1d1f0a01',
    intent: 'ship the release',
    input: { repo: 'acme/app', count: 3, flags: { fast: true }, tags: ['a', 'b', 'c'] },
    context: { env: 'prod', retries: 2 },
    storage: { workspace: 'vol-ws-1', shared: { cache: 'vol-cache-2' } },
    blackboard: {
      env: 'prod',
      write: { status: 'success', output: 'final text of the agent', score: 0.92, iterations: 2 },
      build: { status: 'failed', output: { stdout: 'compiling\nerror: x', stderr: 'boom', exit_code: 2, duration_ms: 1234 } },
      tests: { status: 'success', output: { unit: { stdout: 'ok 12', stderr: '', exit_code: 0, duration_ms: 50 }, lint: { stdout: '', stderr: 'warn', exit_code: 1 } } },
      review: {
        status: 'success',
        consensus: { score: 0.81, confidence: 0.74, strategy: 'weighted_average', metadata: {} },
        individual_results: [{ agent_id: 'j1', score: 0.85, confidence: 0.9, reasoning: 'clear and complete' }],
        agents: [
          { agent_id: 'j1', output: judgeJson, weight: 1 },
          { agent_id: 'j2', output: '```json\n{"score": 0.4, "confidence": 0.5, "reasoning": "missing error handling"}\n```', weight: 2 },
          { agent_id: 'j3', output: 'plain words, not JSON', weight: 1 },
        ],
      },
      child: { status: 'success', result: { summary: 'done', files: 3 }, child_execution_id: 'c0ffee00-0000-4000-8000-000000000001' },
      approve: { status: 'success', response: 'approved' },
      empty: '',
      nothing: null,
    },
    feedback: 'fix the failing test',
    humanFeedback: 'looks good, ship it',
    ...over,
  });
}

const s = scope();
const r = (template: string, sc: TemplateScope = s): string => renderTemplate(template, sc);

test('intent, input, workflow.context, storage, execution.id, state.feedback, human.feedback', (t) => {
  t.is(r('{{intent}}'), 'ship the release');
  t.is(r('{{input.repo}} {{input.count}} {{input.flags.fast}}'), 'acme/app 3 true');
  t.is(r('{{workflow.context.env}}/{{workflow.context.retries}}'), 'prod/2');
  t.is(r('{{workflow.storage.workspace}} {{workflow.storage.shared_volumes.cache}}'), 'vol-ws-1 vol-cache-2');
  t.is(r('{{execution.id}}'), '2b1f5c1e-8d0a-4a57-9c3c-2f4f1d1f0a01');
  t.is(r('{{state.feedback}}'), 'fix the failing test');
  t.is(r('{{human.feedback}}'), 'looks good, ship it');
});

test('Agent state: output, status, score; blackboard.KEY reads the same entry', (t) => {
  t.is(r('{{write.output}}'), 'final text of the agent');
  t.is(r('{{write.status}} {{write.score}} {{write.iterations}}'), 'success 0.92 2');
  t.is(r('{{blackboard.write.output}}'), 'final text of the agent');
  t.is(r('{{blackboard.env}} {{env}}'), 'prod prod');
});

test('System / ContainerRun: output.stdout, .stderr, .exit_code, .duration_ms; the whole output renders as JSON', (t) => {
  t.is(r('{{build.output.stdout}}|{{build.output.stderr}}|{{build.output.exit_code}}|{{build.output.duration_ms}}'), 'compiling\nerror: x|boom|2|1234');
  t.is(r('{{build.status}}'), 'failed');
  t.deepEqual(JSON.parse(r('{{build.output}}')), { stdout: 'compiling\nerror: x', stderr: 'boom', exit_code: 2, duration_ms: 1234 });
  t.notRegex(r('{{build.output}} {{input.tags}}'), /\[object Object\]/);
  t.is(r('{{input.tags}}'), '["a","b","c"]');
});

test('ParallelContainerRun: output.STEP.stdout / stderr / exit_code', (t) => {
  t.is(r('{{tests.output.unit.stdout}} {{tests.output.unit.exit_code}} {{tests.output.lint.stderr}} {{tests.output.lint.exit_code}}'), 'ok 12 0 warn 1');
});

test('ParallelAgents: consensus.score / confidence, agents.N.output and fields of JSON judge output (also fenced)', (t) => {
  t.is(r('{{review.consensus.score}} {{review.consensus.confidence}}'), '0.81 0.74');
  t.is(r('{{review.agents.0.output}}'), judgeJson);
  t.is(r('{{review.agents.0.output.score}} {{review.agents.0.output.reasoning}}'), '0.85 clear and complete');
  t.is(r('{{review.agents.[0].output.suggestions.[1]}}'), 'trim logs');
  t.is(r('{{review.agents.1.output.score}} {{review.agents.1.output.reasoning}}'), '0.4 missing error handling');
  t.is(r('{{#each review.agents.0.output.suggestions}}[{{this}}]{{/each}}'), '[add tests][trim logs]');
  // A judge whose text is not JSON has no fields: the placeholder says which key is absent.
  t.is(r('{{review.agents.2.output.score}}'), '<missing review.agents.2.output.score: state "review" has no "agents.2.output.score">');
});

test('Subworkflow: result and child_execution_id; Human: response', (t) => {
  t.deepEqual(JSON.parse(r('{{child.result}}')), { summary: 'done', files: 3 });
  t.is(r('{{child.result.summary}} {{child.child_execution_id}}'), 'done c0ffee00-0000-4000-8000-000000000001');
  t.is(r('{{approve.response}}'), 'approved');
});

test('helpers: length upper lower trim json first_line default', (t) => {
  t.is(r('{{length input.tags}} {{length input.repo}} {{length input.flags}} {{length input.count}}'), '3 8 1 0');
  t.is(r('{{upper input.repo}} {{lower "MiXeD"}}'), 'ACME/APP mixed');
  t.is(r('[{{trim "  padded \n"}}]'), '[padded]');
  t.is(r('{{json input.flags}}'), '{\n  "fast": true\n}');
  t.is(r('{{json review.agents.0.output}}'), JSON.stringify(JSON.parse(judgeJson), null, 2));
  t.is(r('{{first_line build.output.stdout}}'), 'compiling');
  t.is(r('{{default input.missing "fallback"}}|{{default empty "e"}}|{{default nothing "n"}}|{{default input.repo "x"}}'), 'fallback|e|n|acme/app');
  t.is(r('{{default input.flags "x"}}'), '{"fast":true}');
  t.is(r('{{upper (first_line build.output.stdout)}}'), 'COMPILING');
});

test('conditionals and loops, with @index, ../ and block params; {{#if}} on a missing key is false', (t) => {
  t.is(r('{{#if write.score}}scored{{else}}unscored{{/if}}'), 'scored');
  t.is(r('{{#if later.output}}yes{{else}}no{{/if}}'), 'no');
  t.is(r('{{#unless build.output.exit_code}}zero{{else}}non-zero{{/unless}}'), 'non-zero');
  t.is(r('{{#each input.tags}}{{@index}}={{this}}@{{../input.repo}};{{/each}}'), '0=a@acme/app;1=b@acme/app;2=c@acme/app;');
  t.is(r('{{#each input.tags as |tag i|}}{{i}}:{{upper tag}} {{/each}}'), '0:A 1:B 2:C ');
  t.is(r('{{#each review.individual_results}}{{agent_id}}={{score}}{{/each}}'), 'j1=0.85');
  t.is(r('{{#with build.output}}{{exit_code}}/{{@root.input.repo}}{{/with}}'), '2/acme/app');
  t.is(r('{{#each later.items}}x{{else}}none{{/each}}'), 'none');
});

test('a numeric last segment is an index ({{input.tags.0}}); number literals and quoted text are left alone', (t) => {
  t.is(r('{{input.tags.0}} {{input.tags.2}} {{{input.tags.1}}}'), 'a c b');
  t.is(r('{{#each review.agents.1.output.reasoning}}{{/each}}{{review.agents.0.output.suggestions.1}}'), 'trim logs');
  t.is(r('{{default input.nope 0.5}} {{default input.nope "a.0"}} {{default input.nope -1}}'), '0.5 a.0 -1');
  t.is(r('{{input.tags.7}}'), '<missing input.tags.7: the workflow input has no "tags.7">');
});

test('no HTML escaping', (t) => {
  const sc = scope({ input: { html: '<b>"a" & \'b\'</b>' } });
  t.is(r('{{input.html}} {{{input.html}}}', sc), '<b>"a" & \'b\'</b> <b>"a" & \'b\'</b>');
});

test('a missing key renders a placeholder naming the key and the state that has not completed', (t) => {
  t.is(r('{{deploy.output}}'), '<missing deploy.output: state "deploy" has not completed>');
  t.is(r('{{deploy.output.stdout}}'), '<missing deploy.output.stdout: state "deploy" has not completed>');
  t.is(r('{{blackboard.deploy}}'), '<missing blackboard.deploy: state "deploy" has not completed>');
  t.is(r('{{build.output.nope}}'), '<missing build.output.nope: state "build" has no "output.nope">');
  t.is(r('{{input.nope}}'), '<missing input.nope: the workflow input has no "nope">');
  t.is(r('{{workflow.context.nope}}'), '<missing workflow.context.nope: not in spec.context>');
  t.is(r('{{workflow.storage.shared_volumes.nope}}'), '<missing workflow.storage.shared_volumes.nope: not declared in spec.storage>');
  t.is(r('{{upper deploy.output}}'), '<missing deploy.output: state "deploy" has not completed>');
  t.is(r('{{json deploy.output}} {{length deploy.output}}'), '<missing deploy.output: state "deploy" has not completed> <missing deploy.output: state "deploy" has not completed>');
  t.is(r('{{#each input.tags}}{{nope}}{{/each}}'), '<missing nope: not defined in the current block context>'.repeat(3));
  const bare = scope({ intent: undefined, feedback: undefined, humanFeedback: undefined });
  t.is(r('{{intent}}', bare), '<missing intent: the execution was started without an intent>');
  t.is(r('{{state.feedback}}', bare), '<missing state.feedback: no incoming transition set feedback>');
  t.is(r('{{human.feedback}}', bare), '<missing human.feedback: no Human state has been answered>');
  // Prototype properties are not keys.
  t.is(r('{{input.constructor}}'), '<missing input.constructor: the workflow input has no "constructor">');
  t.is(r('{{build.__proto__}}'), '<missing build.__proto__: state "build" has no "__proto__">');
});

test('null renders empty; a reserved name wins over a blackboard key of the same name', (t) => {
  t.is(r('[{{nothing}}]'), '[]');
  const sc = scope({ blackboard: { input: { shadow: true } } });
  t.is(r('{{input.repo}} {{blackboard.input.shadow}}', sc), 'acme/app true');
});

test('a broken template renders a template-error placeholder; checkTemplate reports it', (t) => {
  t.regex(r('{{#if}}'), /^<template error: Parse error/);
  t.regex(r('{{nohelper input.repo}}'), /^<template error: Missing helper: "nohelper"/);
  t.regex(checkTemplate('{{#each x}}') ?? '', /Parse error/);
  t.is(checkTemplate('{{upper input.x}} {{#each a.b}}{{this}}{{/each}}'), undefined);
});

test('the same template text renders against different scopes (compiled once, no state kept)', (t) => {
  const a = scope({ input: { repo: 'one' } });
  const b = scope({ input: { repo: 'two' } });
  t.is(r('{{input.repo}}', a), 'one');
  t.is(r('{{input.repo}}', b), 'two');
});

test('text without a mustache is handed back as Handlebars renders it, and the scope is never built for it (property)', (t) => {
  let built = 0;
  const lazy = (): TemplateScope => {
    built++;
    return scope();
  };
  fc.assert(
    fc.property(fc.string({ unit: 'binary' }).filter((s) => !s.includes('{{') && !s.includes('\u0000')), (s) => {
      // The same text after a comment (not standalone, so nothing is stripped) goes through Handlebars itself.
      return renderTemplate(s, lazy) === s && r(`a{{!x}}${s}`) === `a${s}`;
    }),
    { numRuns: 500 },
  );
  t.is(built, 0);
  t.regex(renderTemplate('x\u0000y', lazy), /^<template error: Lexical error/);
  t.is(renderTemplate('{{input.repo}} and {{env}}', lazy), 'acme/app and prod');
  t.is(built, 1);
});
