// Issue 14, finding 6, replayed as written on a real node (process isolation, bubblewrap): with
// `subcommand_allowlist {git: [status]}` the agent writes `/workspace/.git/config` with
// `fsmonitor = "id > /workspace/X"` through fs.write, then runs `cmd.run git status`. Git must still run (the
// status is the tool result) and X must not exist: the repository's command-valued config is turned off.
import test from 'ava';
import { mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { startScriptedLlm, type ChatRequest } from '../support/scripted-llm.ts';
import { api, sseEvents, startStack, stepOf } from './execution-scenarios.ts';

const AGENT = `apiVersion: orch.dev/v1
kind: Agent
metadata: { name: git-status, version: 1.0.0 }
spec:
  runtime: { language: node, version: "20", isolation: process, model: default }
  task: { instruction: Show the git status of the workspace. }
  execution: { mode: iterative, max_iterations: 1, llm_timeout_seconds: 30, iteration_timeout: 120, validation: [] }
  security: { resources: { timeout: 180 } }
  tools:
    - fs.write
    - fs.read
    - name: cmd.run
      executor: builtin:cmd
      config: { subcommand_allowlist: { git: [status] } }
`;

const CONFIG = `[core]
\trepositoryformatversion = 0
\tbare = false
\tfsmonitor = "id > /workspace/X"
[filter "evil"]
\tclean = "id > /workspace/X; cat"
`;

// The attack: a repository made with fs.write alone (HEAD, config, the objects and refs directories), an attribute
// that routes a file through the filter, then `git status`, then a look for X.
const STEPS = [
  { name: 'fs_write', arguments: { path: '.git/HEAD', content: 'ref: refs/heads/main\n' } },
  { name: 'fs_write', arguments: { path: '.git/config', content: CONFIG } },
  { name: 'fs_write', arguments: { path: '.git/objects/info/keep', content: 'x' } },
  { name: 'fs_write', arguments: { path: '.git/refs/heads/keep', content: 'x' } },
  { name: 'fs_write', arguments: { path: '.gitattributes', content: '* filter=evil\n' } },
  { name: 'fs_write', arguments: { path: 'a.txt', content: 'hello\n' } },
  { name: 'cmd_run', arguments: { command: 'git', args: ['status'] } },
  { name: 'fs_read', arguments: { path: 'X' } },
];

test('cmd.run git status does not run the fsmonitor or a filter an agent wrote into .git/config', async (t) => {
  const dir = await mkdtemp(path.join(os.tmpdir(), 'orch-git-cfg-'));
  t.teardown(() => rm(dir, { recursive: true, force: true }));
  const llm = await startScriptedLlm((body) => {
    const s = stepOf(body as ChatRequest);
    const step = STEPS[s.toolsDone];
    return step ? { tool_calls: [step] } : { content: 'done' };
  });
  t.teardown(() => llm.close());
  const s = await startStack(t, { dir, isolation: 'process' }, llm);
  const dep = await api<{ agent_id: string }>(s, 'POST', '/v1/agents', { manifest_yaml: AGENT });
  t.is(dep.status, 201, JSON.stringify(dep.body));
  const run = await api<{ execution_id: string }>(s, 'POST', '/v1/executions', { agent_id: dep.body.agent_id, input: 'status please' });
  t.is(run.status, 200, JSON.stringify(run.body));
  const events = await sseEvents(s, run.body.execution_id);
  t.truthy(events.find((e) => 'execution_completed' in e), JSON.stringify(events));

  const last = llm.requests.at(-1) as ChatRequest;
  const tools = last.messages.filter((m) => m.role === 'tool').map((m) => String(m.content));
  t.is(tools.length, STEPS.length);
  // git ran and answered (so the test is not passing because git is missing) …
  t.regex(tools[6] ?? '', /"exit_code":0/);
  t.regex(tools[6] ?? '', /On branch main/);
  // … and neither the fsmonitor nor the clean filter ran: X was never written.
  t.notRegex(tools[7] ?? '', /uid=/);
  t.regex(tools[7] ?? '', /NotFound|not found|ENOENT|does not exist/i);
});
