// A workflow's state machine as an SVG: states in columns by distance from the initial state, transitions as arrows
// (back edges curve below), the current state filled, terminal states (no transitions) with a double border.
export interface Graph {
  initial_state: string | null;
  states: { name: string; kind: string; targets: { target: string; condition: string }[] }[];
}

const W = 132;
const H = 40;
const GX = 56;
const GY = 22;

export function layout(g: Graph): Map<string, { x: number; y: number; col: number }> {
  const level = new Map<string, number>();
  const names = g.states.map((s) => s.name);
  const byName = new Map(g.states.map((s) => [s.name, s]));
  const start = g.initial_state && byName.has(g.initial_state) ? g.initial_state : names[0];
  if (start) {
    level.set(start, 0);
    const queue = [start];
    while (queue.length) {
      const cur = queue.shift()!;
      for (const t of byName.get(cur)?.targets ?? []) {
        if (!level.has(t.target) && byName.has(t.target)) {
          level.set(t.target, level.get(cur)! + 1);
          queue.push(t.target);
        }
      }
    }
  }
  let max = Math.max(0, ...level.values());
  for (const n of names) if (!level.has(n)) level.set(n, ++max);
  const rows = new Map<number, number>();
  const pos = new Map<string, { x: number; y: number; col: number }>();
  for (const n of names) {
    const col = level.get(n)!;
    const row = rows.get(col) ?? 0;
    rows.set(col, row + 1);
    pos.set(n, { x: 12 + col * (W + GX), y: 12 + row * (H + GY), col });
  }
  return pos;
}

export function StateGraph({ graph, current, status }: { graph: Graph; current: string | null; status: string }) {
  const pos = layout(graph);
  const width = Math.max(...[...pos.values()].map((p) => p.x + W), 200) + 12;
  const height = Math.max(...[...pos.values()].map((p) => p.y + H), 60) + 40;
  const done = status === 'completed' || status === 'failed' || status === 'cancelled';
  return (
    <svg data-testid="wf-graph" class="graph" viewBox={`0 0 ${width} ${height}`} width={width} height={height} role="img" aria-label="workflow state machine">
      <defs>
        <marker id="arrow" viewBox="0 0 10 10" refX="9" refY="5" markerWidth="7" markerHeight="7" orient="auto-start-reverse">
          <path d="M 0 0 L 10 5 L 0 10 z" fill="#7a8699" />
        </marker>
      </defs>
      {graph.states.flatMap((s) =>
        s.targets.map((t, i) => {
          const a = pos.get(s.name);
          const b = pos.get(t.target);
          if (!a || !b) return null;
          const forward = b.col > a.col;
          const d = forward
            ? `M ${a.x + W} ${a.y + H / 2} C ${a.x + W + GX / 2} ${a.y + H / 2}, ${b.x - GX / 2} ${b.y + H / 2}, ${b.x} ${b.y + H / 2}`
            : `M ${a.x + W / 2} ${a.y + H} C ${a.x + W / 2} ${height - 8}, ${b.x + W / 2} ${height - 8}, ${b.x + W / 2 + 4} ${b.y + H}`;
          return (
            <path key={`${s.name}-${t.target}-${i}`} d={d} fill="none" stroke="#7a8699" stroke-width="1.4" marker-end="url(#arrow)">
              <title>{`${s.name} → ${t.target} (${t.condition})`}</title>
            </path>
          );
        }),
      )}
      {graph.states.map((s) => {
        const p = pos.get(s.name)!;
        const isCurrent = s.name === current;
        const cls = isCurrent ? (done ? `state current ${status}` : 'state current') : 'state';
        return (
          <g key={s.name} data-testid={`graph-state-${s.name}`} data-current={isCurrent ? 'true' : 'false'} class={cls} transform={`translate(${p.x} ${p.y})`}>
            <rect width={W} height={H} rx="7" />
            {s.targets.length === 0 ? <rect x="3" y="3" width={W - 6} height={H - 6} rx="5" class="terminal" /> : null}
            <text x={W / 2} y={16} text-anchor="middle" class="name">
              {s.name.length > 17 ? `${s.name.slice(0, 16)}…` : s.name}
            </text>
            <text x={W / 2} y={31} text-anchor="middle" class="kind">
              {s.kind}
            </text>
          </g>
        );
      })}
    </svg>
  );
}
