// Templates inside shell commands (src/workflow/template/shell.ts): every `{{…}}` expansion reaches the shell as an
// ORCH_VALUE_<n> variable referenced from the script, so a value is printed as it is and never run — outside
// quotes, inside double quotes and inside single quotes, in blocks, through helpers. Each script is run by a real
// /bin/sh here with exactly the environment the System runner gives it.
import test from 'ava';
import fc from 'fast-check';
import { spawnSync } from 'node:child_process';
import { renderShellTemplate } from '../../src/workflow/template/render.ts';
import type { TemplateScope } from '../../src/workflow/template/scope.ts';

function scope(input: Record<string, unknown>): TemplateScope {
  return { input, workflow: { context: {}, storage: { shared_volumes: {} } }, blackboard: {}, state: {}, human: {}, execution: { id: 'e1' } } as TemplateScope;
}

function sh(template: string, input: Record<string, unknown>): { stdout: string; script: string } {
  const { script, env } = renderShellTemplate(template, scope(input));
  const r = spawnSync('/bin/sh', ['-c', script], { env: { PATH: '/usr/bin:/bin', ...env }, encoding: 'utf8', cwd: '/' });
  return { stdout: r.stdout, script };
}

const INJECTION = 'x; echo INJECTED uid=$(id -u) > FILE';

test('the webhook title of the attack is one word, printed literally, in every quoting context', (t) => {
  const input = { data: { title: INJECTION } };
  const plain = sh('echo title={{input.data.title}}', input);
  t.is(plain.script, 'echo title="${ORCH_VALUE_0}"');
  t.is(plain.stdout, `title=${INJECTION}\n`);
  t.is(sh('echo "title={{input.data.title}}"', input).stdout, `title=${INJECTION}\n`);
  t.is(sh("echo 'title={{input.data.title}}'", input).stdout, `title=${INJECTION}\n`);
  // One word: printf prints each argument on its own line.
  t.is(sh("printf '%s\\n' {{input.data.title}} end", input).stdout, `${INJECTION}\nend\n`);
});

test('legitimate uses keep working: plain values, helpers, literals, blocks, missing keys, author-written shell', (t) => {
  t.is(sh('echo {{input.x}}', { x: 'hello' }).stdout, 'hello\n');
  t.is(sh('echo {{upper input.x}} {{"lit"}} {{length input.list}}', { x: 'ab', list: [1, 2] }).stdout, 'AB lit 2\n');
  t.is(sh('{{#each input.list}}echo item-{{this}}; {{/each}}echo done', { list: ['a b', "c'd", '$(id)'] }).stdout, "item-a b\nitem-c'd\nitem-$(id)\ndone\n");
  t.is(sh('{{#if input.on}}echo on{{else}}echo off{{/if}}', { on: false }).stdout, 'off\n');
  t.is(sh('echo {{input.obj}}', { obj: { a: 1 } }).stdout, '{"a":1}\n');
  t.regex(sh('echo {{input.nothere}}', {}).stdout, /^<missing input.nothere: .*>\n$/);
  // The author's own shell: pipes, variables, command substitution, escaped quotes.
  t.is(sh('X=1; echo "$X $(echo {{input.x}} | tr a-z A-Z)" \\"q\\"', { x: 'up' }).stdout, '1 UP "q"\n');
});

test('values with quotes, backslashes, newlines, globs and substitutions stay data (property)', (t) => {
  fc.assert(
    fc.property(fc.string({ unit: fc.constantFrom(...`ab '"\\$\`;|&*?(){}[]<>~#!\n\t-=%`.split('')), maxLength: 24 }), (v) => {
      for (const [template, expected] of [
        ['printf "[%s]" {{input.v}}', `[${v}]`],
        ['printf "[%s]" "<{{input.v}}>"', `[<${v}>]`],
        ["printf \"[%s]\" '<{{input.v}}>'", `[<${v}>]`],
      ] as const) {
        const { stdout, script } = sh(template, { v });
        if (stdout !== expected) throw new Error(`${JSON.stringify(v)} via ${script}: ${JSON.stringify(stdout)}`);
      }
    }),
    { numRuns: 150 },
  );
  t.pass();
});

test('a NUL byte in the template or in a value is refused (a shell command cannot hold one)', (t) => {
  t.throws(() => renderShellTemplate('echo a\u0000b', scope({})), { message: /NUL byte/ });
  t.throws(() => renderShellTemplate('echo {{input.v}}', scope({ v: 'a\u0000b' })), { message: /NUL byte/ });
});

test('a command without a mustache is the script as written, with no values, and needs no scope', (t) => {
  const noScope = (): TemplateScope => {
    throw new Error('the scope was built for a literal command');
  };
  t.deepEqual(renderShellTemplate("update_blackboard {\"v0\": 0}", noScope), renderShellTemplate("update_blackboard {\"v0\": 0}{{!x}}", scope({})));
  t.deepEqual(renderShellTemplate('echo "a b" > /tmp/x', noScope).env, {});
  t.throws(() => renderShellTemplate('echo \u0000', noScope), { message: /NUL byte/ });
});
