// The image's checks (issue 17), run by scripts/image-smoke.sh after it built the image: it runs as a non-root user,
// holds the compiled JS and ui/dist and no TypeScript sources, answers /health/ready, serves /ui, and runs an agent
// (a real execution: the LLM is a scripted OpenAI-compatible server on the host) and a shell command in bubblewrap
// inside the container — with the security options docs/DEPLOY.md names, and fails cleanly (never unsandboxed)
// without them.
//
//   node --import tsx scripts/smoke/image.ts IMAGE
import { randomBytes } from 'node:crypto';
import { chmod, mkdtemp, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { startScriptedLlm } from '../../test/support/scripted-llm.ts';
import { http, podman, Report, until } from './support.ts';

/** What a container needs for bubblewrap (docs/DEPLOY.md "Sandbox inside a container"). */
export const SANDBOX_OPTS = ['--security-opt', 'seccomp=unconfined', '--security-opt', 'apparmor=unconfined', '--security-opt', 'systempaths=unconfined'];

const AGENT = `apiVersion: orch.dev/v1
kind: Agent
metadata: { name: smoke-agent, version: 1.0.0 }
spec:
  runtime: { language: node, version: "20", isolation: process, model: default }
  task: { instruction: Answer in one word. }
  execution: { mode: one-shot, max_iterations: 1, llm_timeout_seconds: 60, iteration_timeout: 60, validation: [] }
  security: { resources: { timeout: 120 } }
`;

const WORKFLOW = `apiVersion: orch.dev/v1
kind: Workflow
metadata: { name: smoke-shell, version: 1.0.0 }
spec:
  initial_state: sh
  states:
    sh:
      kind: System
      command: 'echo "sandboxed uid=$(id -u) pid=$$"; test ! -e /app/dist'
      transitions: []
`;

interface Node {
  name: string;
  base: string;
  token: string;
}

async function startNode(image: string, name: string, configDir: string, extra: string[]): Promise<Node> {
  await podman('run', '-d', '--name', name, '-p', '127.0.0.1::8080', '-v', `${configDir}:/etc/orch:ro`, ...extra, image, 'up', '--config', '/etc/orch/node.yaml');
  const port = (await podman('port', name, '8080')).trim().split('\n')[0]!.split(':').pop()!;
  const base = `http://127.0.0.1:${port}`;
  await until(async () => {
    const running = (await podman('inspect', '--format', '{{.State.Running}}', name)).trim();
    if (running !== 'true') throw Object.assign(new Error(`${name} exited: ${(await podman('logs', '--tail', '5', name)).trim()}`), { fatal: true });
    return (await http(base, '/health/ready', { timeoutMs: 3000 })).status === 200 ? true : undefined;
  }, 300_000, `${name} /health/ready`);
  const token = (await podman('exec', name, 'node', 'bin/orch.js', 'token', '--config', '/etc/orch/node.yaml', '--role', 'tenant-admin')).trim();
  return { name, base, token };
}

interface Execution {
  status: string;
  final_output?: unknown;
  reason?: string;
}

async function runAgent(n: Node): Promise<Execution> {
  const dep = await http(n.base, '/v1/agents', { token: n.token, yaml: AGENT });
  if (dep.status !== 201) throw new Error(`deploy agent: ${dep.status} ${dep.text}`);
  const agentId = (dep.json as { agent_id: string }).agent_id;
  const start = await http(n.base, '/v1/executions', { token: n.token, body: { agent_id: agentId, input: 'hello' } });
  const id = (start.json as { execution_id?: string }).execution_id;
  if (!id) throw new Error(`execute: ${start.status} ${start.text}`);
  return until(async () => {
    const e = (await http(n.base, `/v1/executions/${id}`, { token: n.token })).json as Execution;
    return e.status === 'completed' || e.status === 'failed' ? e : undefined;
  }, 180_000, 'the execution to end');
}

async function main(): Promise<void> {
  const image = process.argv[2];
  if (!image) throw new Error('usage: image.ts IMAGE');
  const report = new Report(`image smoke (${image})`);
  const llm = await startScriptedLlm(async () => ({ content: 'forty-two' }), { host: '0.0.0.0' });
  const llmPort = new URL(llm.url).port;
  const dir = await mkdtemp(path.join(os.tmpdir(), 'orch-image-smoke-'));
  // The container's user (node, uid 1000) reads the mounted config.
  await chmod(dir, 0o755);
  const config = (id: string): string => `apiVersion: orch.dev/v1
kind: NodeConfig
metadata: { name: ${id} }
spec:
  node: { id: ${id}, role: hybrid }
  http: { bind: 0.0.0.0, port: 8080 }
  llm_providers:
    - { name: scripted, type: openai, endpoint: "http://host.containers.internal:${llmPort}/v1", api_key: smoke, models: [ { alias: default, model: scripted } ] }
  runtime: { default_isolation: process }
`;
  await writeFile(path.join(dir, 'node.yaml'), config('image-smoke'));
  const sfx = randomBytes(3).toString('hex');
  const names = [`orch-image-smoke-${sfx}`, `orch-image-smoke-nosandbox-${sfx}`];
  try {
    await report.check('the image runs as a non-root user', async () => {
      const user = (await podman('image', 'inspect', '--format', '{{.Config.User}}', image)).trim();
      const uid = (await podman('run', '--rm', '--entrypoint', 'id', image, '-u')).trim();
      if (user !== 'node' || uid === '0') throw new Error(`User=${user} uid=${uid}`);
      return uid;
    }, (uid) => `uid ${uid}`);
    // dist/bundle/: what bin/entry.js runs when it is there (the node as a few files, not ~1,600).
    await report.check('compiled JS, its bundle and ui/dist, no TypeScript sources or compiler', async () => {
      const out = await podman('run', '--rm', '--entrypoint', 'sh', image, '-c',
        'test -f dist/cli/main.js && test -f dist/bundle/cli/main.js && test -f dist/.build-stamp && test -f ui/dist/index.html && test ! -e src && test ! -e node_modules/typescript && ls dist | wc -l');
      return out.trim();
    }, (n) => `${n} entries in dist/`);
    const t0 = Date.now();
    const node = await report.check('the container answers /health/ready', () => startNode(image, names[0]!, dir, SANDBOX_OPTS), () => `${((Date.now() - t0) / 1000).toFixed(1)} s from podman run`);
    if (node) {
      await report.check('it serves the dashboard at /ui (not 503)', async () => {
        const r = await http(node.base, '/ui');
        if (r.status !== 200 || !/<html/i.test(r.text)) throw new Error(`${r.status} ${r.text.slice(0, 200)}`);
        return r.headers.get('content-type') ?? '';
      });
      await report.check('it runs dist/, not the sources through tsx', async () => {
        const logs = await podman('logs', node.name);
        if (/running the sources through tsx/.test(logs)) throw new Error('the node says it runs the sources');
        const cmd = (await podman('exec', node.name, 'cat', '/proc/1/cmdline')).replace(/\0/g, ' ');
        return cmd.trim();
      });
      await report.check('an agent runs in its bubblewrap sandbox in the container and completes', async () => {
        const e = await runAgent(node);
        if (e.status !== 'completed') throw new Error(`execution ${e.status}: ${e.reason ?? ''}`);
        if (llm.requests.length === 0) throw new Error('the scripted LLM saw no request');
        return e;
      }, (e) => `final_output ${JSON.stringify(e.final_output)}, ${llm.requests.length} LLM request(s)`);
      await report.check('a workflow System state runs its shell command in the sandbox', async () => {
        await http(node.base, '/v1/workflows', { token: node.token, yaml: WORKFLOW });
        const run = await http(node.base, '/v1/workflows/smoke-shell/run', { token: node.token, body: {} });
        const id = (run.json as { execution_id?: string }).execution_id;
        if (!id) throw new Error(`run: ${run.status} ${run.text}`);
        const row = await until(async () => {
          const r = (await http(node.base, `/v1/workflows/executions/${id}`, { token: node.token })).json as { status: string; blackboard: { sh?: { output?: { stdout?: string } } }; error?: string };
          return ['completed', 'failed'].includes(r.status) ? r : undefined;
        }, 120_000, 'the workflow to end');
        const stdout = row.blackboard.sh?.output?.stdout ?? '';
        if (row.status !== 'completed' || !/sandboxed uid=\d+ pid=\d+/.test(stdout)) throw new Error(`${row.status}: ${JSON.stringify(row)}`);
        return stdout.trim();
      });
    }
    const node2 = await report.check('without the security options the node still starts', () => startNode(image, names[1]!, dir, []));
    if (node2) {
      await report.check('…but an agent fails cleanly with the sandbox reason (never runs unsandboxed)', async () => {
        const before = llm.requests.length;
        const e = await runAgent(node2);
        if (e.status !== 'failed' || !/sandbox|bubblewrap|bwrap/i.test(e.reason ?? '')) throw new Error(`execution ${e.status}: ${e.reason ?? ''}`);
        if (llm.requests.length !== before) throw new Error('the LLM was called although no sandbox could be made');
        return e.reason ?? '';
      }, (r) => r.slice(0, 160));
    }
  } finally {
    for (const n of names) {
      if (!report.ok) {
        const logs = await podman('logs', '--tail', '40', n).catch(() => '');
        if (logs) process.stdout.write(`--- last log lines of ${n}\n${logs}\n`);
      }
      await podman('rm', '-f', '-t', '2', n).catch(() => '');
    }
    await llm.close();
    await rm(dir, { recursive: true, force: true });
  }
  process.stdout.write(`${report.summary()}\n`);
  process.exitCode = report.ok ? 0 : 1;
}

await main();
