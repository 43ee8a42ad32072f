// Issue 15 item 7: what the CLI shows of what happened, asserted on the real output of `orch` against a real node
// (process isolation, bubblewrap) and the scripted model: tool calls and iteration durations in `agent run`, a
// failed command's stderr printed once, state outputs and the final output in `workflow run --wait`, the blackboard
// in `workflow status` without --json, `orch execution ls|get|cancel|logs`, `--version`, a readable LOAD column.
import test from 'ava';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { eventually, runOrch } from '../support/node-process.ts';
import { startScriptedLlm, type ChatRequest, type ScriptedLlm } from '../support/scripted-llm.ts';
import { api, coderReply, deployAgent, startStack, type Started } from '../agents/execution-scenarios.ts';

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');
const HOLD = 'hold on';

/** A request of an execution whose input asks the model to take its time (cancelled by the test). */
const holds = (body: ChatRequest): boolean => body.messages.some((m) => m.role === 'user' && String(m.content).includes(HOLD));

let stack: Started | undefined;
let llm: ScriptedLlm | undefined;
let dir = '';
let env: Record<string, string | undefined> = {};
let after: () => Promise<void> = async () => undefined;

test.before(async (t) => {
  dir = await mkdtemp(path.join(os.tmpdir(), 'orch-cli-out-'));
  llm = await startScriptedLlm((body) => coderReply(body), { delayMs: (body) => (holds(body) ? 600_000 : 0) });
  const teardowns: (() => unknown)[] = [];
  // startStack registers its teardown on the context; a hook's teardowns run when the hook ends, so keep them.
  const ctx = Object.create(t, { teardown: { value: (fn: () => unknown) => void teardowns.push(fn) } }) as typeof t;
  stack = await startStack(ctx, { dir, isolation: 'process' }, llm);
  await deployAgent(t, stack, 'coder', 'process');
  env = { ORCH_URL: stack.http, ORCH_TOKEN: stack.token, ORCH_CONFIG: undefined };
  const deployed = await runOrch(['workflow', 'deploy', '-f', path.join(ROOT, 'examples/workflows/hello.yaml')], env);
  t.is(deployed.code, 0, deployed.stderr);
  after = async () => {
    for (const fn of teardowns) await fn();
  };
});

test.after.always(async () => {
  await after();
  await llm?.close();
  if (dir) await rm(dir, { recursive: true, force: true });
});

const count = (haystack: string, needle: string): number => haystack.split(needle).length - 1;
/** The output without the tool call lines (whose arguments quote the program, `console.error('boom')` included). */
const withoutTools = (out: string): string => out.split('\n').filter((l) => !l.startsWith('  tool ')).join('\n');

test('agent run shows each tool call and iteration durations, and a failed command\'s stderr once', async (t) => {
  const run = await runOrch(['agent', 'run', 'coder', '--input', 'please greet'], env);
  t.is(run.code, 0, run.stderr);
  const out = run.stdout;
  t.log(out);
  // Iteration 1: fs.write then cmd.run (exit 2), then the validation failure; iteration 2 the same, exit 0.
  t.regex(out, /^ {2}tool fs\.write \{"path":"main\.js","content":".*\} → ok \(\d+(\.\d)? (ms|s)\)$/m);
  t.regex(out, /^ {2}tool cmd\.run \{"command":"node","args":\["main\.js"\]\} → exit 2 \(\d+(\.\d)? (ms|s)\)$/m);
  t.regex(out, /^ {2}tool cmd\.run \{"command":"node","args":\["main\.js"\]\} → exit 0 \(\d+(\.\d)? (ms|s)\)$/m);
  t.is(count(out, '  tool '), 4, 'four tool calls in two iterations');
  t.regex(out, /^iteration 1 failed after \d+(\.\d)? (ms|s): ValidationFailed exit_code: the last command exited with 2, expected 0; stderr shown above$/m);
  t.regex(out, /^iteration 2 completed after \d+(\.\d)? (ms|s)$/m);
  // The program's stderr was printed when it ran; the failure line does not repeat it (it did before issue 15).
  t.is(count(withoutTools(out), 'boom'), 1, 'the stderr of the failed command appears once');
  t.regex(out, /completed after 2 iteration\(s\):\nfixed main\.js\n$/);
});

test('a run that fails does not print the last failure a third time in its reason', async (t) => {
  // One iteration allowed: the reason of execution_failed ends with iteration 1's failure, already on screen.
  const yaml = `apiVersion: orch.dev/v1
kind: Agent
metadata: { name: once, version: 1.0.0 }
spec:
  runtime: { language: node, version: "20", isolation: process, model: default }
  task: { instruction: Write main.js and run it. }
  execution: { mode: one-shot, llm_timeout_seconds: 20, iteration_timeout: 60, validation: [ { type: exit_code, expected: 0 } ] }
  tools:
    - fs.write
    - name: cmd.run
      executor: builtin:cmd
      config: { subcommand_allowlist: { node: [] } }
`;
  const res = await api<{ agent_id: string }>(stack!, 'POST', '/v1/agents', { manifest_yaml: yaml });
  t.is(res.status, 201, JSON.stringify(res.body));
  const run = await runOrch(['agent', 'run', 'once', '--input', 'please greet'], env);
  t.is(run.code, 1);
  t.log(run.stdout);
  t.is(count(withoutTools(run.stdout), 'boom'), 1, 'stderr once, not in the failure line nor in the reason');
  t.regex(run.stdout, /^failed: validation failed after 1 iteration\(s\) \(the failure of iteration 1 is above\)$/m);
  t.regex(run.stderr, /did not complete/);
});

test('execution ls, get, logs (so far and --follow) and cancel', async (t) => {
  const s = stack!;
  const agent = (await api<{ agent_id: string }>(s, 'GET', '/v1/agents/lookup/coder')).body.agent_id;
  const done = await api<{ execution_id: string }>(s, 'POST', `/v1/agents/${agent}/execute`, { input: 'please greet' });
  const doneId = done.body.execution_id;
  await eventually(async () => ((await api<{ status: string }>(s, 'GET', `/v1/executions/${doneId}`)).body.status === 'completed' ? true : undefined), 120_000, 'completed');

  const ls = await runOrch(['execution', 'ls', '--agent', 'coder'], env);
  t.is(ls.code, 0, ls.stderr);
  t.regex(ls.stdout, /^EXECUTION_ID\s+AGENT\s+STATUS\s+ITERATION\s+CREATED_AT\s+INPUT$/m);
  t.regex(ls.stdout, new RegExp(`^${doneId}\\s+coder 1\\.0\\.0\\s+completed\\s+2\\s+\\S+\\s+please greet$`, 'm'));
  const lsJson = await runOrch(['--json', 'execution', 'ls', '--status', 'completed'], env);
  t.true((JSON.parse(lsJson.stdout) as { executions: { execution_id: string }[] }).executions.some((e) => e.execution_id === doneId));

  const get = await runOrch(['execution', 'get', doneId], env);
  t.is(get.code, 0, get.stderr);
  t.regex(get.stdout, /^status {6}completed$/m);
  t.regex(get.stdout, /^iterations {2}2$/m);
  t.regex(get.stdout, /^final output:\n {2}fixed main\.js$/m);

  const logs = await runOrch(['execution', 'logs', doneId], env);
  t.is(logs.code, 0, logs.stderr);
  t.regex(logs.stdout, new RegExp(`^execution ${doneId} started$`, 'm'));
  t.regex(logs.stdout, /^ {2}tool cmd\.run .* → exit 2/m);
  t.regex(logs.stdout, /completed after 2 iteration\(s\):\nfixed main\.js\n$/);
  const followed = await runOrch(['execution', 'logs', '--follow', doneId], env);
  t.is(followed.stdout, logs.stdout, 'a finished execution reads the same with --follow');

  // A running execution (the model holds its answer): logs prints what is there and returns; cancel ends it.
  const held = await api<{ execution_id: string }>(s, 'POST', `/v1/agents/${agent}/execute`, { input: HOLD });
  const heldId = held.body.execution_id;
  await eventually(async () => (llm!.requests.some(holds) ? true : undefined), 120_000, 'the held model call');
  const soFar = await runOrch(['execution', 'logs', heldId], env);
  t.is(soFar.code, 0, soFar.stderr);
  t.regex(soFar.stdout, /^iteration 1 started$/m);
  t.notRegex(soFar.stdout, /completed|failed/);
  const following = runOrch(['execution', 'logs', '-f', heldId], env);
  const cancel = await runOrch(['execution', 'cancel', heldId], env);
  t.is(cancel.code, 0, cancel.stderr);
  t.regex(cancel.stdout, new RegExp(`^(cancelling|cancelled) ${heldId}\n$`));
  const tail = await following;
  t.is(tail.code, 0, tail.stderr);
  t.regex(tail.stdout, /^failed: cancelled$/m, 'the follower ends with the cancellation');
  await eventually(async () => ((await api<{ status: string }>(s, 'GET', `/v1/executions/${heldId}`)).body.status === 'cancelled' ? true : undefined), 60_000, 'cancelled');
  const again = await runOrch(['execution', 'cancel', heldId], env);
  t.is(again.code, 1);
  t.regex(again.stderr, /^orch: execution is already cancelled\n$/);
  const missing = await runOrch(['execution', 'get', '00000000-0000-4000-8000-000000000000'], env);
  t.is(missing.code, 1);
  t.regex(missing.stderr, /404/);
});

test('workflow run --wait shows each state output and the final output', async (t) => {
  const run = await runOrch(['workflow', 'run', 'hello', '--input', '{"name":"Ada"}', '--wait'], env);
  t.is(run.code, 0, run.stderr);
  t.log(run.stdout);
  t.regex(run.stdout, /^→ greet \(visit 1\)$/m);
  t.regex(run.stdout, /^ {2}✓ greet \(success\): \{.*\}$/m);
  t.regex(run.stdout, /^ {2}✓ count \(success\): \{.*"stdout":"3\\n".*\}$/m);
  const final = /^completed\nfinal output:\n(\{[\s\S]*\})\n$/m.exec(run.stdout)?.[1];
  t.deepEqual(JSON.parse(final ?? 'null'), { message: 'Hello, Ada', letters: '3' }, 'the final output, last');
  t.regex(final ?? '', /^ {2}"message": "Hello, Ada",?$/m, 'indented JSON');
});

test('workflow status shows the blackboard without --json', async (t) => {
  // The help always promised the blackboard; before issue 15 only --json showed it.
  const started = await api<{ execution_id: string }>(stack!, 'POST', '/v1/workflows/hello/run', { input: { name: 'Ada' } });
  const id = started.body.execution_id;
  await eventually(async () => ((await api<{ status: string }>(stack!, 'GET', `/v1/workflows/executions/${id}`)).body.status === 'completed' ? true : undefined), 120_000, 'completed');
  const status = await runOrch(['workflow', 'status', id], env);
  t.is(status.code, 0, status.stderr);
  t.log(status.stdout);
  t.regex(status.stdout, /^blackboard:$/m);
  t.regex(status.stdout, /^ {2}greeting: "Ada"$/m);
  t.regex(status.stdout, /^ {2}count: \{.*"stdout":"3\\n".*\}$/m);
  t.regex(status.stdout, /^ {2}letters: "3"$/m);
});

test('orch --version prints the package version; node ls shows LOAD as words', async (t) => {
  const pkg = JSON.parse(await readFile(path.join(ROOT, 'package.json'), 'utf8')) as { version: string };
  for (const flag of ['--version', '-V']) {
    const v = await runOrch([flag], {});
    t.is(v.code, 0, v.stderr);
    t.is(v.stdout, `${pkg.version}\n`);
  }
  // The hybrid node reports its load with its first heartbeat.
  const ls = await eventually(async () => {
    const r = await runOrch(['node', 'ls'], env);
    return /execs \d/.test(r.stdout) ? r : undefined;
  }, 120_000, 'a load in node ls');
  t.log(ls.stdout);
  t.regex(ls.stdout, /^NODE_ID\s+ROLE\s+STATUS\s+GRPC_ADDRESS\s+LOAD\s+LAST_HEARTBEAT_AT$/m);
  // A hybrid node's own row carries the load a worker reports: CPU and memory use, its pending and running executions.
  t.regex(ls.stdout, /\scpu \d+% mem \d+% execs \d+\s/);
  t.notRegex(ls.stdout, /[{}]/, 'no JSON in the table');
});
