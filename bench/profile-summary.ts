// Summarises a V8 .cpuprofile (bench/cpu-profile.cjs, --cpu-prof): self time per function and per module (the
// package under node_modules, the file under dist/ or src/, or node's internals), so docs/BENCHMARKS.md can say where
// a node's CPU goes. Usage: `tsx bench/profile-summary.ts <file.cpuprofile> [top]`.
import { readFileSync } from 'node:fs';

interface Node {
  id: number;
  callFrame: { functionName: string; url: string; lineNumber: number };
  children?: number[];
}
interface Profile {
  nodes: Node[];
  samples: number[];
  timeDeltas: number[];
  startTime: number;
  endTime: number;
}

function moduleOf(url: string, fn: string): string {
  if (!url) return fn.startsWith('(') ? fn : '(native)';
  const nm = url.lastIndexOf('node_modules/');
  if (nm >= 0) {
    const rest = url.slice(nm + 'node_modules/'.length).split('/');
    return `npm:${rest[0]?.startsWith('@') ? `${rest[0]}/${rest[1]}` : rest[0]}`;
  }
  if (url.startsWith('node:')) return url;
  const m = /\/(dist|src)\/(.*)$/.exec(url);
  return m ? `orch:${m[2]}` : url;
}

export function summarise(p: Profile, top = 40): string {
  const byId = new Map(p.nodes.map((n) => [n.id, n]));
  const self = new Map<number, number>();
  for (let i = 0; i < p.samples.length; i++) self.set(p.samples[i]!, (self.get(p.samples[i]!) ?? 0) + (p.timeDeltas[i] ?? 0));
  const total = [...self.values()].reduce((a, b) => a + b, 0);
  const fnTotals = new Map<string, number>();
  const modTotals = new Map<string, number>();
  for (const [id, us] of self) {
    const n = byId.get(id)!;
    const f = `${n.callFrame.functionName || '(anonymous)'} ${moduleOf(n.callFrame.url, n.callFrame.functionName)}:${n.callFrame.lineNumber + 1}`;
    fnTotals.set(f, (fnTotals.get(f) ?? 0) + us);
    const m = moduleOf(n.callFrame.url, n.callFrame.functionName);
    modTotals.set(m, (modTotals.get(m) ?? 0) + us);
  }
  const pct = (us: number) => `${((100 * us) / total).toFixed(1).padStart(5)} %  ${(us / 1000).toFixed(0).padStart(6)} ms`;
  const lines = [`profile: ${(total / 1000).toFixed(0)} ms sampled over ${((p.endTime - p.startTime) / 1e6).toFixed(1)} s`, '', 'by module (self time):'];
  for (const [m, us] of [...modTotals].sort((a, b) => b[1] - a[1]).slice(0, top)) lines.push(`  ${pct(us)}  ${m}`);
  lines.push('', 'by function (self time):');
  for (const [f, us] of [...fnTotals].sort((a, b) => b[1] - a[1]).slice(0, top)) lines.push(`  ${pct(us)}  ${f}`);
  return lines.join('\n');
}

if (process.argv[1]?.endsWith('profile-summary.ts')) {
  const file = process.argv[2];
  if (!file) throw new Error('usage: profile-summary.ts <file.cpuprofile> [top]');
  process.stdout.write(`${summarise(JSON.parse(readFileSync(file, 'utf8')) as Profile, Number(process.argv[3] ?? 40))}\n`);
}
