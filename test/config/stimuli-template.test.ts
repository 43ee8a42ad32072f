// A stimulus route's input_template that does not parse is a config error at load (it would otherwise render
// `<template error: ...>` as the input of every delivery on that route); one that parses loads.
import test from 'ava';
import { Errors } from '../../src/errors/catalog.ts';
import { ConfigError } from '../../src/config/errors.ts';
import { loadNodeConfig } from '../../src/config/load.ts';

const config = (template: string): string =>
  `apiVersion: orch.dev/v1\nkind: NodeConfig\nmetadata: { name: x }\nspec:\n  stimuli:\n    routes:\n      - { source: ok, workflow: w }\n      - { source: hook, workflow: w, input_template: '${template}' }\n`;

test('spec.stimuli.routes[].input_template must parse', (t) => {
  const err = t.throws(() => loadNodeConfig({ env: {}, text: config('{"n": {{content.n}}}') }), { instanceOf: ConfigError });
  t.is(err?.spec, Errors.CONFIG_INVALID);
  t.regex(err?.message ?? '', /^config error: spec\.stimuli\.routes\[1\]\.input_template: does not parse: Parse error/);
  t.false((err?.message ?? '').includes('\n'));
  const ok = loadNodeConfig({ env: {}, text: config('{"n": {{content.n}} }') });
  t.is(ok.stimuli?.routes[1]?.input_template, '{"n": {{content.n}} }');
});
