// The process guard (src/node/process-guard.ts) in a real child process: unhandled rejections and dependency
// errors are logged and counted and the process runs on; any other uncaught exception still ends it (exit 1).
import test from 'ava';
import { spawn } from 'node:child_process';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const FIXTURE = path.join(path.dirname(fileURLToPath(import.meta.url)), 'fixtures/guarded-process.ts');

function run(what: string): Promise<{ code: number | null; stdout: string; stderr: string }> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, ['--import', 'tsx', FIXTURE, what], { stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (d: Buffer) => (stdout += d.toString()));
    child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
    const timer = setTimeout(() => {
      child.kill('SIGKILL');
      reject(new Error(`fixture ${what} timed out: ${stderr}`));
    }, 120_000);
    child.on('exit', (code) => {
      clearTimeout(timer);
      resolve({ code, stdout, stderr });
    });
  });
}

test('unhandled rejections are logged and counted; the process runs on', async (t) => {
  const r = await run('rejection');
  t.is(r.code, 0, r.stderr);
  const report = JSON.parse(r.stdout.trim()) as { alive: boolean; counters: string[] };
  t.true(report.alive);
  t.true(report.counters.some((l) => /kind="rejection"/.test(l) && /outage="false"/.test(l) && / 1$/.test(l)), report.counters.join('\n'));
  t.true(report.counters.some((l) => /kind="rejection"/.test(l) && /outage="true"/.test(l) && / 1$/.test(l)), report.counters.join('\n'));
  t.regex(r.stderr, /unhandled promise rejection; the node keeps running/);
  t.regex(r.stderr, /a bug nobody caught/);
});

test("a dependency's 'error' event with no listener is logged and counted; the process runs on", async (t) => {
  const r = await run('outage-event');
  t.is(r.code, 0, r.stderr);
  const report = JSON.parse(r.stdout.trim()) as { counters: string[] };
  t.true(report.counters.some((l) => /kind="exception"/.test(l) && /outage="true"/.test(l)), report.counters.join('\n'));
  t.regex(r.stderr, /uncaught dependency error; the node keeps running/);
});

test('any other uncaught exception still ends the process, logged at fatal', async (t) => {
  const r = await run('bug');
  t.is(r.code, 1);
  t.is(r.stdout, '');
  t.regex(r.stderr, /"level":60/);
  t.regex(r.stderr, /uncaught exception; exiting/);
});
