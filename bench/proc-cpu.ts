// CPU time of another process (a node under load, a bench peer) from /proc/<pid>/stat, for CPU-per-operation figures.
import { readdir, readFile } from 'node:fs/promises';

export const CLK_TCK = 100;

/**
 * The fields of a /proc/<pid>/stat line after the command name, which may hold spaces and parentheses: [0] state,
 * [1] ppid, [2] pgrp, [11] utime, [12] stime, [13] cutime, [14] cstime (clock ticks).
 */
export function statFields(stat: string): string[] {
  return stat.slice(stat.lastIndexOf(')') + 2).split(' ');
}

/** User and system CPU seconds of a process so far. */
export async function cpuTimes(pid: number): Promise<{ user: number; system: number }> {
  const stat = await readFile(`/proc/${pid}/stat`, 'utf8');
  const f = statFields(stat);
  return { user: Number(f[11]) / CLK_TCK, system: Number(f[12]) / CLK_TCK };
}

/** User + system CPU seconds of a process so far. */
export async function cpuSeconds(pid: number): Promise<number> {
  const t = await cpuTimes(pid);
  return t.user + t.system;
}

type Querier = { query: <R extends object>(sql: string) => Promise<{ rows: R[] }> };

/** CPU (ms) of one process from /proc/<pid>/stat (utime + stime, clock ticks of 10 ms); undefined once it is gone. */
export async function procCpuMs(pid: number): Promise<number | undefined> {
  const stat = await readFile(`/proc/${pid}/stat`, 'utf8').catch(() => undefined);
  if (stat === undefined) return undefined;
  const fields = statFields(stat);
  return (Number(fields[11] ?? 0) + Number(fields[12] ?? 0)) * 10;
}

/**
 * The CPU that PostgreSQL's backends serving the bench database spend over a window: the backends are listed from
 * pg_stat_activity and their /proc CPU sampled every 250 ms while the load runs, so a backend that starts during the
 * window counts from zero and one that exits counts up to its last sample (the pool closes idle connections).
 * Background processes (WAL writer, checkpointer) are shared with the machine's other databases and left out.
 */
export class BackendCpu {
  private readonly first = new Map<number, number>();
  private readonly last = new Map<number, number>();
  private started = false;

  constructor(private readonly db: Querier) {}

  async sample(): Promise<void> {
    const r = await this.db.query<{ pid: number }>('SELECT pid FROM pg_stat_activity WHERE datname = current_database()');
    for (const { pid } of r.rows) {
      const ms = await procCpuMs(pid);
      if (ms === undefined) continue;
      if (!this.first.has(pid)) this.first.set(pid, this.started ? 0 : ms);
      this.last.set(pid, ms);
    }
    this.started = true;
  }

  private sampler: Promise<void> | undefined;
  private stopped = false;

  /** Takes the first sample, then one every 250 ms until total(). */
  async start(): Promise<void> {
    await this.sample();
    this.sampler = (async () => {
      while (!this.stopped) {
        await new Promise((r) => setTimeout(r, 250));
        if (!this.stopped) await this.sample();
      }
    })();
  }

  /** Milliseconds of backend CPU since the first sample so far, the sampler left running (per-minute figures). */
  async soFar(): Promise<number> {
    await this.sample();
    let sum = 0;
    for (const [pid, end] of this.last) sum += end - (this.first.get(pid) ?? end);
    return sum;
  }

  /** Milliseconds of backend CPU since the first sample (takes one more sample first). */
  async total(): Promise<number> {
    this.stopped = true;
    await this.sampler;
    await this.sample();
    let sum = 0;
    for (const [pid, end] of this.last) sum += end - (this.first.get(pid) ?? end);
    return sum;
  }
}

/** CPU seconds of a process's reaped children (cutime + cstime): for a node, the sandboxes it started and waited for. */
export async function childCpuSeconds(pid: number): Promise<number> {
  const stat = await readFile(`/proc/${pid}/stat`, 'utf8');
  const f = statFields(stat);
  return (Number(f[13]) + Number(f[14])) / CLK_TCK;
}

/**
 * The CPU of a process's live children, from /proc: their own (utime + stime) and what they reaped (cutime +
 * cstime). For a node: its sandbox spawner (bench/density.ts), which forks and reaps every sandbox, so the sandboxes'
 * CPU lands in the spawner's reaped time, not the node's.
 */
export async function liveChildrenCpuSeconds(pid: number): Promise<{ own: number; reaped: number }> {
  let own = 0;
  let reaped = 0;
  for (const name of await readdir('/proc')) {
    if (!/^\d+$/.test(name)) continue;
    const stat = await readFile(`/proc/${name}/stat`, 'utf8').catch(() => '');
    if (!stat) continue;
    const f = statFields(stat);
    if (Number(f[1]) !== pid) continue;
    own += (Number(f[11]) + Number(f[12])) / CLK_TCK;
    reaped += (Number(f[13]) + Number(f[14])) / CLK_TCK;
  }
  return { own, reaped };
}
