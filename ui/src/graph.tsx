// A workflow's state machine as an SVG: states in columns by distance from the initial state, transitions as arrows
// (back edges curve below), the current state filled, terminal states (no transitions) with a double border.
// The SVG is sized by its viewBox to the width it is given, so a long machine fits instead of running off the panel;
// zoom (buttons, ctrl+wheel) and drag-to-pan move the viewBox for a closer look, "fit" shows the whole again.
import { useRef, useState } from 'preact/hooks';

export interface Graph {
  initial_state: string | null;
  states: { name: string; kind: string; targets: { target: string; condition: string }[] }[];
}

const W = 124;
const H = 40;
const GX = 44;
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

interface View {
  x: number;
  y: number;
  w: number;
  h: number;
}

export function StateGraph({
  graph,
  current,
  status,
  selected,
  onState,
}: {
  graph: Graph;
  current: string | null;
  status: string;
  selected?: string | undefined;
  onState?: (name: string) => void;
}) {
  const pos = layout(graph);
  const width = Math.max(...[...pos.values()].map((p) => p.x + W), 200) + 12;
  const height = Math.max(...[...pos.values()].map((p) => p.y + H), 60) + 40;
  const done = status === 'completed' || status === 'failed' || status === 'cancelled';
  const fit: View = { x: 0, y: 0, w: width, h: height };
  const [view, setView] = useState<View | undefined>();
  const v = view ?? fit;
  const svgRef = useRef<SVGSVGElement>(null);
  const drag = useRef<{ px: number; py: number; v: View; moved: boolean } | undefined>();
  const zoom = (f: number): void => {
    const w = Math.min(width, Math.max(width / 8, v.w / f));
    const h = (w / width) * height;
    const cx = v.x + v.w / 2;
    const cy = v.y + v.h / 2;
    setView(w >= width ? undefined : { x: cx - w / 2, y: cy - h / 2, w, h });
  };
  const unitsPerPx = (): number => v.w / Math.max(1, svgRef.current?.clientWidth ?? v.w);
  return (
    <div class="graph-box">
      <div class="graph-tools">
        <button data-testid="graph-zoom-in" title="zoom in" onClick={() => zoom(1.4)}>
          +
        </button>
        <button data-testid="graph-zoom-out" title="zoom out" onClick={() => zoom(1 / 1.4)}>
          −
        </button>
        <button data-testid="graph-fit" title="show the whole machine" onClick={() => setView(undefined)}>
          fit
        </button>
      </div>
    <svg
      ref={svgRef}
      data-testid="wf-graph"
      class={`graph ${view ? 'zoomed' : ''}`}
      viewBox={`${v.x} ${v.y} ${v.w} ${v.h}`}
      preserveAspectRatio="xMidYMid meet"
      // Shrinks to fit a narrow panel, never grows past its natural size (a two-state machine stays readable).
      style={{ maxWidth: `${width * 1.25}px`, margin: '0 auto' }}
      role="img"
      aria-label="workflow state machine"
      onWheel={(e) => {
        if (!e.ctrlKey && !e.metaKey) return;
        e.preventDefault();
        zoom(e.deltaY < 0 ? 1.15 : 1 / 1.15);
      }}
      onPointerDown={(e) => {
        if (!view) return;
        drag.current = { px: e.clientX, py: e.clientY, v, moved: false };
      }}
      onPointerMove={(e) => {
        const d = drag.current;
        if (!d) return;
        if (!d.moved) {
          // A click on a state stays a click; only a real drag captures the pointer and pans.
          if (Math.hypot(e.clientX - d.px, e.clientY - d.py) < 4) return;
          d.moved = true;
          (e.currentTarget as Element).setPointerCapture(e.pointerId);
        }
        const k = unitsPerPx();
        setView({ ...d.v, x: d.v.x - (e.clientX - d.px) * k, y: d.v.y - (e.clientY - d.py) * k });
      }}
      onPointerUp={() => (drag.current = undefined)}
    >
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
        const cls = `${isCurrent ? (done ? `state current ${status}` : 'state current') : 'state'}${selected === s.name ? ' picked' : ''}`;
        return (
          <g
            key={s.name}
            data-testid={`graph-state-${s.name}`}
            data-current={isCurrent ? 'true' : 'false'}
            class={cls}
            transform={`translate(${p.x} ${p.y})`}
            onClick={() => onState?.(s.name)}
          >
            <title>{`${s.name} (${s.kind})`}</title>
            <rect width={W} height={H} rx="7" />
            {s.targets.length === 0 ? <rect x="3" y="3" width={W - 6} height={H - 6} rx="5" class="terminal" /> : null}
            <text x={W / 2} y={16} text-anchor="middle" class="name">
              {s.name.length > 16 ? `${s.name.slice(0, 15)}…` : s.name}
            </text>
            <text x={W / 2} y={31} text-anchor="middle" class="kind">
              {s.kind}
            </text>
          </g>
        );
      })}
    </svg>
    </div>
  );
}
