// CPU time of another process (a node under load, a bench peer) from /proc/<pid>/stat, for CPU-per-operation figures.
import { readFile } from 'node:fs/promises';

const CLK_TCK = 100;

/** User and system CPU seconds of a process so far. */
export async function cpuTimes(pid: number): Promise<{ user: number; system: number }> {
  const stat = await readFile(`/proc/${pid}/stat`, 'utf8');
  // Fields after the command name (which may hold spaces) start after the last ')'.
  const f = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  return { user: Number(f[11]) / CLK_TCK, system: Number(f[12]) / CLK_TCK };
}

/** User + system CPU seconds of a process so far. */
export async function cpuSeconds(pid: number): Promise<number> {
  const t = await cpuTimes(pid);
  return t.user + t.system;
}
