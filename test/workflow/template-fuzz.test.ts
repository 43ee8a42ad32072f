// Rendering and custom expressions never throw, whatever the template text (property tests with fast-check).
import test from 'ava';
import fc from 'fast-check';
import { evaluateExpressionDetailed, renderTemplate } from '../../src/workflow/template/render.ts';
import { buildScope } from '../../src/workflow/template/scope.ts';

const scope = buildScope({
  executionId: 'e-1',
  input: { a: 1, s: 'text', list: [1, 2] },
  context: { k: 'v' },
  storage: { shared: {} },
  blackboard: { build: { status: 'success', output: { stdout: 'x', exit_code: 0 } }, judge: { agents: [{ output: '{"score":0.5}' }] } },
});

// Fragments that make templates and expressions interesting: mustaches, helpers, blocks, operators, paths.
const fragment = fc.constantFrom(
  '{{', '}}', '{{{', '}}}', '{{#if ', '{{/if}}', '{{#each ', '{{/each}}', '{{else}}', 'build.output.exit_code', 'input.a',
  'judge.agents.0.output.score', 'missing.x', ' == ', ' != ', ' < ', ' >= ', ' && ', ' || ', '!', '(', ')', '"q"', "'", '0', '1.5',
  'upper ', 'json ', 'default ', 'length ', 'this', '../', '@index', '@root.', '.', '[', ']', '~', '>', 'log ', '{{> p}}', ' ',
);
const templateText = fc.oneof(fc.string(), fc.array(fragment, { maxLength: 12 }).map((parts) => parts.join('')));

test('renderTemplate returns a string for any text', (t) => {
  fc.assert(fc.property(templateText, (text) => typeof renderTemplate(text, scope) === 'string'), { numRuns: 400 });
  t.pass();
});

test('evaluateExpression returns a boolean (with a reason when false by error) for any text', (t) => {
  fc.assert(
    fc.property(templateText, (text) => {
      const r = evaluateExpressionDetailed(text, scope);
      return typeof r.value === 'boolean' && (r.error === undefined || (r.value === false && r.error.length > 0));
    }),
    { numRuns: 400 },
  );
  t.pass();
});

test('the log helper is not available (no console output from templates)', (t) => {
  t.regex(renderTemplate('{{log "x"}}', scope), /^<template error: Missing helper: "log"/);
});
