// parseAgentManifest: defaults of a minimal manifest, unit forms, and for each kind of bad input the field it names.
import test from 'ava';
import { readFile } from 'node:fs/promises';
import { Ajv } from 'ajv';
import { parseAgentManifest, parseCpu, parseDuration, parseMemory } from '../../src/agents/manifest/parse.ts';
import { agentManifestSchema } from '../../src/agents/manifest/schema.ts';
import { KNOWN_TOOLS } from '../../src/agents/manifest/known-tools.ts';
import type { ManifestError } from '../../src/agents/manifest/types.ts';

const MINIMAL = `apiVersion: orch.dev/v1
kind: Agent
metadata: { name: tiny, version: 1.0.0 }
spec:
  runtime: { language: python, version: "3.12" }
  task: { instruction: Say hello. }
`;

function errorsOf(yaml: string): ManifestError[] {
  const r = parseAgentManifest(yaml);
  if (r.ok) throw new Error(`expected errors, got a manifest: ${JSON.stringify(r.manifest)}`);
  return r.errors;
}

function fields(yaml: string): string[] {
  return errorsOf(yaml).map((e) => e.field);
}

test('a minimal manifest gets every default', (t) => {
  const r = parseAgentManifest(MINIMAL);
  if (!r.ok) return t.fail(JSON.stringify(r.errors));
  const m = r.manifest;
  t.is(m.apiVersion, 'orch.dev/v1');
  t.deepEqual(m.metadata, { name: 'tiny', version: '1.0.0' });
  t.deepEqual(m.spec.runtime, { language: 'python', version: '3.12', image_pull_policy: 'IfNotPresent', isolation: 'inherit', model: 'default' });
  t.deepEqual(m.spec.execution, { mode: 'one-shot', max_iterations: 1, llm_timeout_seconds: 120, iteration_timeout: 300, validation: [] });
  t.deepEqual(m.spec.security, { network: { mode: 'none', allowlist: [] }, filesystem: { read: [], write: [] }, resources: { timeout: 600 } });
  t.deepEqual(m.spec.volumes, []);
  t.deepEqual(m.spec.tools, []);
  t.deepEqual(m.spec.env, {});
});

test('iterative mode defaults to 5 iterations and caps at 20; one-shot is always 1', (t) => {
  const it = (extra: string): number => {
    const r = parseAgentManifest(`${MINIMAL}  execution: { ${extra} }\n`);
    if (!r.ok) throw new Error(JSON.stringify(r.errors));
    return r.manifest.spec.execution.max_iterations;
  };
  t.is(it('mode: iterative'), 5);
  t.is(it('mode: iterative, max_iterations: 7'), 7);
  t.is(it('mode: iterative, max_iterations: 50'), 20);
  t.is(it('mode: one-shot, max_iterations: 3'), 1);
});

test('the example agent is valid: iterative, fs.write, fs.read and cmd.run with an allowlist for node and sh', async (t) => {
  const r = parseAgentManifest(await readFile(new URL('../../examples/agents/hello.yaml', import.meta.url), 'utf8'));
  if (!r.ok) return t.fail(JSON.stringify(r.errors));
  t.is(r.manifest.spec.execution.mode, 'iterative');
  t.deepEqual(r.manifest.spec.tools.map((x) => x.name), ['fs.write', 'fs.read', 'cmd.run']);
  const cmd = r.manifest.spec.tools[2]!;
  t.is(cmd.executor, 'builtin:cmd');
  t.deepEqual(Object.keys(cmd.config?.subcommand_allowlist ?? {}).sort(), ['node', 'sh']);
});

test('tools: a bare name becomes {name}; an object with executor and config is kept', (t) => {
  const r = parseAgentManifest(`${MINIMAL}  tools:
    - web.fetch
    - { name: cmd.run, executor: builtin:cmd, config: { subcommand_allowlist: { git: [status, log] } } }
`);
  if (!r.ok) return t.fail(JSON.stringify(r.errors));
  t.deepEqual(r.manifest.spec.tools, [
    { name: 'web.fetch' },
    { name: 'cmd.run', executor: 'builtin:cmd', config: { subcommand_allowlist: { git: ['status', 'log'] } } },
  ]);
});

test('quantities: memory, cpu and timeouts in their written forms', (t) => {
  const r = parseAgentManifest(`${MINIMAL}  execution: { llm_timeout_seconds: 30s, iteration_timeout: 5m }
  security: { resources: { cpu: "0.5", memory: 1Gi, timeout: 1h } }
`);
  if (!r.ok) return t.fail(JSON.stringify(r.errors));
  t.is(r.manifest.spec.execution.llm_timeout_seconds, 30);
  t.is(r.manifest.spec.execution.iteration_timeout, 300);
  t.deepEqual(r.manifest.spec.security.resources, { cpu: 500, memory_bytes: 1024 ** 3, timeout: 3600 });
  t.is(parseMemory('512Mi'), 512 * 1024 * 1024);
  t.is(parseMemory('256M'), 256_000_000);
  t.is(parseMemory(1048576), 1048576);
  t.is(parseMemory('lots'), undefined);
  t.is(parseCpu('500m'), 500);
  t.is(parseCpu(2), 2000);
  t.is(parseCpu(0.25), 250);
  t.is(parseCpu(1500), 1500);
  t.is(parseCpu('-1'), undefined);
  t.is(parseDuration(45), 45);
  t.is(parseDuration('90s'), 90);
  t.is(parseDuration('2h'), 7200);
  t.is(parseDuration('soon'), undefined);
});

test('versions written as YAML numbers keep their spelling (3.10 is not 3.1)', (t) => {
  const r = parseAgentManifest(MINIMAL.replace('version: 1.0.0', 'version: 2.0').replace('version: "3.12"', 'version: 3.10'));
  if (!r.ok) return t.fail(JSON.stringify(r.errors));
  t.is(r.manifest.metadata.version, '2.0');
  t.is(r.manifest.spec.runtime.version, '3.10');
});

test('YAML syntax errors carry the line', (t) => {
  const errs = errorsOf('apiVersion: orch.dev/v1\nkind: Agent\nmetadata: { name: x\n  version: [\n');
  t.true(errs.length >= 1);
  t.is(errs[0]!.field, '(root)');
  t.is(typeof errs[0]!.line, 'number');
  t.regex(errs[0]!.message, /line \d+/);
  t.regex(errorsOf('a: 1\na: 2\n')[0]!.message, /line 2/);
});

test('structural errors name their field', (t) => {
  t.deepEqual(fields(MINIMAL.replace('apiVersion: orch.dev/v1', 'apiVersion: v1')), ['apiVersion']);
  t.deepEqual(fields(MINIMAL.replace('kind: Agent', 'kind: Workflow')), ['kind']);
  t.deepEqual(fields(MINIMAL.replace('name: tiny', 'name: Not_A_Name')), ['metadata.name']);
  t.deepEqual(fields(MINIMAL.replace(', version: 1.0.0', '')), ['metadata.version']);
  t.deepEqual(fields(MINIMAL.replace('  task: { instruction: Say hello. }\n', '')), ['spec.task']);
  t.deepEqual(fields(MINIMAL.replace('language: python, ', '')), ['spec.runtime.language']);
  t.deepEqual(fields(`${MINIMAL}  colour: blue\n`), ['spec.colour']);
  t.deepEqual(fields(MINIMAL.replace('version: "3.12"', 'version: "3.12", gpu: true')), ['spec.runtime.gpu']);
  t.deepEqual(fields(`${MINIMAL}  execution: { mode: forever }\n`), ['spec.execution.mode']);
  t.deepEqual(fields(`${MINIMAL}  runtime2: {}\n`), ['spec.runtime2']);
  t.deepEqual(fields(`${MINIMAL}  security: { network: { mode: open } }\n`), ['spec.security.network.mode']);
  t.deepEqual(fields(`${MINIMAL}  execution: { validation: [ { type: semantic } ] }\n`), ['spec.execution.validation[0].judge_agent']);
  t.deepEqual(fields(`${MINIMAL}  execution: { validation: [ { type: exit_code, expected: 0, extra: 1 } ] }\n`), ['spec.execution.validation[0].extra']);
  t.deepEqual(fields(`${MINIMAL}  tools: [ { executor: builtin:cmd } ]\n`), ['spec.tools[0].name']);
  t.deepEqual(fields(`${MINIMAL}  env: { A: [1] }\n`), ['spec.env.A']);
  t.deepEqual(fields(`${MINIMAL}  volumes: [ { name: data } ]\n`), ['spec.volumes[0].mount_path']);
  const unknown = errorsOf(`${MINIMAL}  colour: blue\n`)[0]!;
  t.is(unknown.message, 'is not a known field');
});

test('labels, annotations and env accept any keys', (t) => {
  const r = parseAgentManifest(MINIMAL.replace('{ name: tiny, version: 1.0.0 }', '{ name: tiny, version: 1.0.0, labels: { anything: goes }, annotations: { "x/y": z } }') + '  env: { FOO: bar, PORT: 8080 }\n');
  if (!r.ok) return t.fail(JSON.stringify(r.errors));
  t.deepEqual(r.manifest.spec.env, { FOO: 'bar', PORT: '8080' });
});

test('semantic errors name their field: tools, runtime pairs, quantities', (t) => {
  const unknownTool = errorsOf(`${MINIMAL}  tools: [ fs.read, fs.teleport ]\n`);
  t.deepEqual(unknownTool.map((e) => e.field), ['spec.tools[1]']);
  t.regex(unknownTool[0]!.message, /fs\.teleport/);
  t.deepEqual(fields(`${MINIMAL}  tools: [ { name: nope.tool } ]\n`), ['spec.tools[0].name']);
  t.deepEqual(fields(MINIMAL.replace('version: "3.12"', 'version: "2.7"')), ['spec.runtime.version']);
  t.deepEqual(fields(MINIMAL.replace('language: python', 'language: cobol')), ['spec.runtime.language']);
  t.deepEqual(fields(MINIMAL.replace('language: python, version: "3.12"', 'language: node')), ['spec.runtime.version']);
  t.deepEqual(fields(MINIMAL.replace('language: python, version: "3.12"', 'language: custom')), ['spec.runtime.image']);
  t.true(parseAgentManifest(MINIMAL.replace('language: python, version: "3.12"', 'language: custom, image: "ghcr.io/me/agent:1"')).ok);
  t.deepEqual(fields(`${MINIMAL}  security: { resources: { memory: 12 parsecs } }\n`), ['spec.security.resources.memory']);
  t.deepEqual(fields(`${MINIMAL}  security: { resources: { cpu: lots } }\n`), ['spec.security.resources.cpu']);
  t.deepEqual(fields(`${MINIMAL}  security: { resources: { timeout: forever } }\n`), ['spec.security.resources.timeout']);
  t.deepEqual(fields(`${MINIMAL}  execution: { llm_timeout_seconds: -3 }\n`), ['spec.execution.llm_timeout_seconds']);
  t.deepEqual(fields(`${MINIMAL}  tools: [ fs.read, fs.read ]\n`), ['spec.tools[1]']);
  // Several problems are all reported.
  t.deepEqual(fields(`${MINIMAL}  tools: [ x.y ]\n  security: { resources: { cpu: lots } }\n`).sort(), ['spec.security.resources.cpu', 'spec.tools[0]']);
});

test('empty or non-mapping input is an error, not a throw', (t) => {
  t.deepEqual(fields(''), ['(root)']);
  t.deepEqual(fields('- a\n- b\n'), ['(root)']);
  t.deepEqual(fields('just text'), ['(root)']);
});

test('the schema is a valid JSON Schema and the known tools include the execution and orch tools', (t) => {
  t.notThrows(() => new Ajv({ strict: true, allowUnionTypes: true }).compile(agentManifestSchema));
  t.is(KNOWN_TOOLS.size, 81);
  for (const name of ['fs.read', 'fs.write', 'web.fetch', 'web.search', 'cmd.run', 'orch.agent.create', 'orch.workflow.run', 'orch.script.delete']) {
    t.true(KNOWN_TOOLS.has(name), name);
  }
});
