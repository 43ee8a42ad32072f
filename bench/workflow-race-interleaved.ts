// The API race with the engines interleaved per concurrency step (issue 16). workflow-race-api runs each engine's
// whole sweep (every concurrency) before the next engine's, minutes apart, so on this shared 2-core VM a ratio
// followed the machine's drift as much as the engines. Here every contestant is up at once (Restate over its ingress,
// `orch up` over HTTP run-and-wait and gRPC RunWorkflow, and with --against a second orch build from another
// checkout's dist/), and at each concurrency they take turns, round after round, in a new random order each round
// (a second apart): each round's ratios compare measurements seconds apart. An idle contestant costs next to nothing meanwhile.
//   npm run bench -- workflow-race-interleaved [--runs N] [--workflows W] [--concurrency 1,64] [--private-pg]
//     [--against /work/wt/base]
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { startPrivatePg } from './private-pg.ts';
import { cpuSeconds } from './proc-cpu.ts';
import { median } from './stats.ts';
import { drive, startRestate, type RaceFigures } from './workflow-race.ts';
import { ensureDist, pgCpuDelta, startOrchApi, workflowsAt, type OrchApi } from './workflow-race-api.ts';

interface Contestant {
  label: string;
  /** One workflow, resolved when it completed. */
  one: (i: number) => Promise<void>;
  /** orch's CPU per workflow (node, PostgreSQL backends) over a measurement, when it is an orch node. */
  orch?: OrchApi;
}

interface Measured extends RaceFigures {
  nodeCpu?: number;
  pgCpu?: number;
}

/**
 * The contestants in a seeded random order. Not a rotation: rotating a fixed list keeps every contestant's successor
 * the same, and the one measured right after Restate (whose background work outlasts its measurement) was then
 * always the same orch path (the first version of this bench: orch HTTP followed Restate in 4 rounds of 5).
 */
function shuffled<T>(items: T[], seed: number): T[] {
  const out = [...items];
  let x = (seed * 2654435761) >>> 0 || 1;
  const next = (): number => {
    // xorshift32: deterministic, so a run's orders can be told from its seed.
    x ^= x << 13;
    x >>>= 0;
    x ^= x >>> 17;
    x ^= x << 5;
    x >>>= 0;
    return x / 4294967296;
  };
  for (let i = out.length - 1; i > 0; i--) {
    const j = Math.floor(next() * (i + 1));
    [out[i], out[j]] = [out[j]!, out[i]!];
  }
  return out;
}

async function measure(c: Contestant, total: number, concurrency: number): Promise<Measured> {
  const o = c.orch;
  if (!o) return drive(total, concurrency, c.one);
  const pid = o.node.child.pid ?? 0;
  const [cpu0, pg0] = [await cpuSeconds(pid), await o.pgCpu()];
  const f = await drive(total, concurrency, c.one);
  const [cpu1, pg1] = [await cpuSeconds(pid), await o.pgCpu()];
  return { ...f, nodeCpu: ((cpu1 - cpu0) * 1000) / f.workflows, pgCpu: (pgCpuDelta(pg0, pg1) * 1000) / f.workflows };
}

export async function benchWorkflowRaceInterleaved(
  runs: number,
  workflows: number,
  concurrencies: number[],
  out: (line: string) => void,
  o: { privatePg?: boolean; against?: string } = {},
): Promise<void> {
  await ensureDist(out);
  const server = o.privatePg ? await startPrivatePg() : undefined;
  let dbs = 0;
  const fresh = async (): Promise<{ databaseUrl?: string }> => (server ? { databaseUrl: await server.createDatabase(`race_${process.pid}_${dbs++}`) } : {});
  const closers: (() => Promise<void>)[] = [];
  try {
    const restate = await startRestate();
    closers.push(() => restate.close());
    const contestants: Contestant[] = [{ label: `Restate ${restate.version}`, one: (i) => restate.invoke(`${Date.now()}-${i}`) }];
    const builds: { name: string; bin?: string }[] = [{ name: 'orch' }, ...(o.against ? [{ name: `orch@${path.basename(o.against)}`, bin: path.join(o.against, 'bin/orch.js') }] : [])];
    for (const b of builds) {
      const api = await startOrchApi({ ...(await fresh()), ...(b.bin ? { bin: b.bin } : {}) });
      closers.push(() => api.close());
      contestants.push({ label: `${b.name} HTTP`, one: () => api.invoke.http(), orch: api }, { label: `${b.name} gRPC`, one: () => api.invoke.grpc(), orch: api });
    }
    for (const c of contestants) await drive(50, 8, c.one); // warm-up (JIT, pools, plan caches)
    const restateOf = contestants[0]!;
    out(`contestants: ${contestants.map((c) => c.label).join(', ')}; ${runs} rounds per concurrency, each in a seeded random order`);
    for (const c of concurrencies) {
      const total = workflowsAt(workflows, c);
      const rounds: Map<string, Measured>[] = [];
      for (let r = 0; r < runs; r++) {
        const round = new Map<string, Measured>();
        const order = shuffled(contestants, c * 1000 + r);
        for (const k of order) {
          // A contestant's after-effects (Restate's log flushes, a node's GC) settle before the next one is measured.
          await new Promise((res) => setTimeout(res, 1000));
          round.set(k.label, await measure(k, total, c));
        }
        rounds.push(round);
        const load = readFileSync('/proc/loadavg', 'utf8').split(' ').slice(0, 3).join(' ');
        const rs = round.get(restateOf.label)!.stepsPerSecond;
        out(
          `c=${c} round ${r + 1} (order: ${order.map((k) => k.label).join(', ')}; load ${load}): ` +
            contestants
              .map((k) => {
                const m = round.get(k.label)!;
                const cpu = m.nodeCpu !== undefined ? ` (node ${m.nodeCpu.toFixed(2)}, pg ${m.pgCpu!.toFixed(2)} ms/wf)` : '';
                return `${k.label} ${m.stepsPerSecond.toFixed(0)} steps/s p50 ${m.p50Ms.toFixed(1)}${k === restateOf ? '' : ` ${(m.stepsPerSecond / rs).toFixed(2)}x`}${cpu}`;
              })
              .join(' | '),
        );
      }
      out(`c=${c}, W=${total}: medians of ${runs} rounds; the ratio is the median (min–max) of each round's own ratio to that round's Restate`);
      out('| contestant | steps/s | p50 ms | p99 ms | node cpu ms/wf | pg cpu ms/wf | vs Restate |');
      out('|---|---|---|---|---|---|---|');
      for (const k of contestants) {
        const pick = (f: (m: Measured) => number | undefined): number => median(rounds.map((x) => f(x.get(k.label)!) ?? 0));
        const ratios = rounds.map((x) => x.get(k.label)!.stepsPerSecond / x.get(restateOf.label)!.stepsPerSecond).sort((a, b) => a - b);
        const cpu = k.orch ? `${pick((m) => m.nodeCpu).toFixed(2)} | ${pick((m) => m.pgCpu).toFixed(2)}` : ' | ';
        const ratio = k === restateOf ? '' : `${median(ratios).toFixed(2)}x (${ratios[0]!.toFixed(2)}–${ratios.at(-1)!.toFixed(2)})`;
        out(`| ${k.label} | ${pick((m) => m.stepsPerSecond).toFixed(0)} | ${pick((m) => m.p50Ms).toFixed(1)} | ${pick((m) => m.p99Ms).toFixed(1)} | ${cpu} | ${ratio} |`);
      }
    }
  } finally {
    for (const close of closers.reverse()) await close().catch(() => undefined);
    await server?.close();
  }
}
