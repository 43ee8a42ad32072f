// A private PostgreSQL server for a bench: initdb into a temp directory and `postgres -p <random port>`, run as the
// postgres user (initdb refuses root), with pg_stat_statements preloaded so the bench can report per-statement
// costs. The shared server on 5432 is never touched (other people's tests run on it). Stopped and removed by close().
import { execFileSync, spawn, type ChildProcess } from 'node:child_process';
import { existsSync, readdirSync } from 'node:fs';
import { chmod, mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import pg from 'pg';
import { freePort } from '../test/support/private-services.ts';

export interface PrivatePg {
  /** postgres://postgres@127.0.0.1:<port>/postgres */
  adminUrl: string;
  port: number;
  pid: number;
  /** A new database on this server; answers its URL. */
  createDatabase(name: string): Promise<string>;
  close(): Promise<void>;
}

function pgBin(): string {
  const root = '/usr/lib/postgresql';
  const versions = existsSync(root) ? readdirSync(root).sort((a, b) => Number(b) - Number(a)) : [];
  const v = versions.find((x) => existsSync(path.join(root, x, 'bin/postgres')));
  if (!v) throw new Error('no PostgreSQL server binaries under /usr/lib/postgresql');
  return path.join(root, v, 'bin');
}

/** Runs `argv` as the postgres user when we are root (initdb and postgres refuse to run as root). */
function asPostgres(argv: string[]): string[] {
  return process.getuid?.() === 0 ? ['runuser', '-u', 'postgres', '--', ...argv] : argv;
}

export async function startPrivatePg(settings: Record<string, string> = {}): Promise<PrivatePg> {
  const bin = pgBin();
  const dir = await mkdtemp(path.join(os.tmpdir(), 'orch-bench-pg-'));
  await chmod(dir, 0o777);
  const data = path.join(dir, 'data');
  const argv0 = asPostgres([path.join(bin, 'initdb'), '-D', data, '-U', 'postgres', '--auth=trust', '-E', 'UTF8', '--no-instructions']);
  execFileSync(argv0[0]!, argv0.slice(1), { stdio: 'ignore' });
  const port = await freePort();
  const options: Record<string, string> = {
    shared_preload_libraries: 'pg_stat_statements',
    'pg_stat_statements.track': 'all',
    max_connections: '100',
    shared_buffers: '256MB',
    unix_socket_directories: dir,
    listen_addresses: '127.0.0.1',
    ...settings,
  };
  const args = [path.join(bin, 'postgres'), '-D', data, '-p', String(port), ...Object.entries(options).flatMap(([k, v]) => ['-c', `${k}=${v}`])];
  const argv = asPostgres(args);
  const child: ChildProcess = spawn(argv[0]!, argv.slice(1), { stdio: ['ignore', 'ignore', 'pipe'] });
  let stderr = '';
  child.stderr?.on('data', (d: Buffer) => (stderr = (stderr + d.toString()).slice(-4000)));
  const adminUrl = `postgres://postgres@127.0.0.1:${port}/postgres`;
  const deadline = Date.now() + 60_000;
  for (;;) {
    const c = new pg.Client({ connectionString: adminUrl });
    try {
      await c.connect();
      await c.end();
      break;
    } catch {
      await c.end().catch(() => undefined);
      if (child.exitCode !== null || Date.now() > deadline) throw new Error(`private PostgreSQL did not start: ${stderr}`);
      await new Promise((r) => setTimeout(r, 200));
    }
  }
  // The postgres child is runuser's child when we are root: its pid is the postmaster's parent. Find the postmaster.
  const pid = Number(execFileSync('sh', ['-c', `head -1 ${path.join(data, 'postmaster.pid')}`]).toString().trim());
  return {
    adminUrl,
    port,
    pid,
    async createDatabase(name) {
      const c = new pg.Client({ connectionString: adminUrl });
      await c.connect();
      try {
        await c.query(`CREATE DATABASE ${name}`);
      } finally {
        await c.end();
      }
      const c2 = new pg.Client({ connectionString: `postgres://postgres@127.0.0.1:${port}/${name}` });
      await c2.connect();
      await c2.query('CREATE EXTENSION IF NOT EXISTS pg_stat_statements').finally(() => c2.end());
      return `postgres://postgres@127.0.0.1:${port}/${name}`;
    },
    async close() {
      if (child.exitCode === null) {
        const exited = new Promise((r) => child.once('exit', r));
        // SIGINT: PostgreSQL's fast shutdown. Sent to the postmaster itself (runuser forwards nothing).
        try {
          process.kill(pid, 'SIGINT');
        } catch {
          /* already gone */
        }
        await Promise.race([exited, new Promise((r) => setTimeout(r, 20_000))]);
        if (child.exitCode === null) {
          try {
            process.kill(pid, 'SIGKILL');
          } catch {
            /* gone */
          }
        }
      }
      await rm(dir, { recursive: true, force: true });
    },
  };
}
