#!/usr/bin/env node
// The bootstrap that runs inside an agent's sandbox (container or process). It holds no state worth losing: it asks
// the orchestrator's dispatch gateway what to do (`generate`), runs each `dispatch` it is given and reports the
// `dispatch_result`, and after each `final` asks again for the next iteration, until the gateway answers `done`.
// Plain JavaScript with no dependencies, so any image with Node 18+ runs it unchanged.
//
// Environment: ORCH_EXECUTION_ID, ORCH_AGENT_ID, ORCH_MODEL_ALIAS, ORCH_ORCHESTRATOR_URL
// (`unix:/orch/run/gateway.sock` or `http://host:port`), optional ORCH_ITERATION (first iteration number).
import http from 'node:http';
import { spawn } from 'node:child_process';

const executionId = process.env.ORCH_EXECUTION_ID ?? '';
const agentId = process.env.ORCH_AGENT_ID ?? '';
const modelAlias = process.env.ORCH_MODEL_ALIAS ?? 'default';
const target = process.env.ORCH_ORCHESTRATOR_URL ?? 'unix:/orch/run/gateway.sock';
const GATEWAY_PATH = '/v1/dispatch-gateway';
// Variables of ours that commands run for the agent do not need to see.
const PRIVATE_ENV = new Set(['ORCH_ORCHESTRATOR_URL', 'ORCH_ITERATION']);

function requestOptions() {
  if (target.startsWith('unix:')) return { socketPath: target.slice('unix:'.length).replace(/^\/\/(?=\/)/, ''), path: GATEWAY_PATH };
  const u = new URL(GATEWAY_PATH, target);
  return { host: u.hostname, port: u.port, path: u.pathname };
}

function post(message) {
  const body = JSON.stringify(message);
  return new Promise((resolve, reject) => {
    const req = http.request(
      { ...requestOptions(), method: 'POST', headers: { 'content-type': 'application/json', 'content-length': Buffer.byteLength(body) } },
      (res) => {
        const chunks = [];
        res.on('data', (c) => chunks.push(c));
        res.on('end', () => {
          const text = Buffer.concat(chunks).toString('utf8');
          if (res.statusCode !== 200) return reject(new Error(`gateway answered ${res.statusCode}: ${text}`));
          try {
            resolve(JSON.parse(text));
          } catch (err) {
            reject(err);
          }
        });
        res.on('error', reject);
      },
    );
    req.on('error', reject);
    req.end(body);
  });
}

/** Keeps the last `max` bytes of a buffer list (output is tail-trimmed, seed 000). */
function tail(chunks, max) {
  const all = Buffer.concat(chunks);
  return all.length > max ? all.subarray(all.length - max) : all;
}

function run(d) {
  const started = Date.now();
  return new Promise((resolve) => {
    const max = Math.max(1, d.max_output_bytes ?? 524288);
    const out = [];
    const err = [];
    let total = 0;
    let truncated = false;
    const env = { ...process.env, ...(d.env_additions ?? {}) };
    for (const k of PRIVATE_ENV) delete env[k];
    let child;
    try {
      child = spawn(d.command, Array.isArray(d.args) ? d.args : [], { cwd: d.cwd || undefined, env, stdio: ['ignore', 'pipe', 'pipe'] });
    } catch (e) {
      resolve({ exit_code: -1, stdout: '', stderr: String(e?.message ?? e), duration_ms: Date.now() - started, truncated: false });
      return;
    }
    const collect = (list) => (c) => {
      total += c.length;
      list.push(c);
      if (total > max) truncated = true;
      // Bound memory: keep at most twice the ceiling per stream while running.
      const size = list.reduce((n, b) => n + b.length, 0);
      if (size > 2 * max) list.splice(0, list.length, tail(list, max));
    };
    child.stdout.on('data', collect(out));
    child.stderr.on('data', collect(err));
    const timer = setTimeout(() => child.kill('SIGKILL'), Math.max(1, d.timeout_secs ?? 300) * 1000);
    let timedOut = false;
    timer.unref?.();
    child.on('error', (e) => {
      clearTimeout(timer);
      resolve({ exit_code: -1, stdout: '', stderr: String(e?.message ?? e), duration_ms: Date.now() - started, truncated: false });
    });
    child.on('close', (code, signal) => {
      clearTimeout(timer);
      if (signal === 'SIGKILL' && Date.now() - started >= (d.timeout_secs ?? 300) * 1000) timedOut = true;
      let stderr = tail(err, max).toString('utf8');
      // Combined output over the ceiling: stderr keeps its tail, stdout gets what is left of the budget (tail).
      const stdoutBudget = Math.max(0, max - Math.min(Buffer.byteLength(stderr), max));
      const stdout = tail(out, truncated ? stdoutBudget : max).toString('utf8');
      if (timedOut) stderr += `\n[orch] command killed after ${d.timeout_secs} s`;
      resolve({ exit_code: code ?? -1, stdout, stderr, duration_ms: Date.now() - started, truncated });
    });
  });
}

async function main() {
  let iteration = Number(process.env.ORCH_ITERATION ?? '1') || 1;
  let reply = await post({ type: 'generate', execution_id: executionId, agent_id: agentId, iteration_number: iteration, model_alias: modelAlias, prompt: '', messages: [] });
  for (;;) {
    if (reply.type === 'dispatch') {
      const result = await run(reply);
      reply = await post({ type: 'dispatch_result', execution_id: executionId, dispatch_id: reply.dispatch_id, ...result });
    } else if (reply.type === 'final') {
      iteration++;
      reply = await post({ type: 'generate', execution_id: executionId, agent_id: agentId, iteration_number: iteration, model_alias: modelAlias, prompt: '', messages: reply.conversation ?? [] });
    } else {
      return; // done
    }
  }
}

main().then(
  () => process.exit(0),
  (err) => {
    process.stderr.write(`orch bootstrap: ${err?.message ?? err}\n`);
    process.exit(1);
  },
);
