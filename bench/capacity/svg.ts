// SVG charts for docs/CAPACITY.md, written directly (no browser, no charting library): per surface one image with
// two panels, carried throughput vs offered load (with the y = x line: everything offered is carried) and p99
// latency vs offered load (with the bound and the knee marked). Both axes are logarithmic: the ladders are geometric.

export interface Panel {
  title: string;
  xLabel: string;
  yLabel: string;
  points: { x: number; y: number }[];
  /** A dashed horizontal line (the latency bound). */
  hline?: { y: number; label: string };
  /** The dashed y = x line (everything offered carried). */
  diagonal?: boolean;
  /** A marked x (the knee). */
  mark?: { x: number; label: string };
}

const W = 380;
const H = 282;
const TITLE = 22;
const M = { left: 58, right: 14, top: 28 + TITLE, bottom: 44 };

const esc = (s: string): string => s.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;');

/** Round-number ticks (1, 2, 5 × 10^k) covering [lo, hi] on a log axis. */
export function logTicks(lo: number, hi: number): number[] {
  const out: number[] = [];
  for (let e = Math.floor(Math.log10(lo)); e <= Math.ceil(Math.log10(hi)); e++) {
    for (const m of [1, 2, 5]) {
      const v = m * 10 ** e;
      if (v >= lo * 0.999 && v <= hi * 1.001) out.push(v);
    }
  }
  return out;
}

function fmt(v: number): string {
  if (v >= 1000) return `${Number((v / 1000).toPrecision(3))}k`;
  return `${Number(v.toPrecision(3))}`;
}

function panel(p: Panel, ox: number): string {
  const pw = W - M.left - M.right;
  const ph = H - M.top - M.bottom;
  const xs = p.points.map((q) => q.x).filter((v) => v > 0);
  const ys = [...p.points.map((q) => q.y), ...(p.hline ? [p.hline.y] : []), ...(p.diagonal ? xs : [])].filter((v) => v > 0);
  // The axes span the data (no empty decades): the ladders start far from 1.
  const xlo = (xs.length ? Math.min(...xs) : 1) * 0.8;
  const xhi = (xs.length ? Math.max(...xs) : 1) * 1.25;
  const ylo = Math.max((ys.length ? Math.min(...ys) : 1) * 0.7, 1e-3);
  const yhi = (ys.length ? Math.max(...ys) : 1) * 1.5;
  const sx = (v: number): number => ox + M.left + ((Math.log10(v) - Math.log10(xlo)) / (Math.log10(xhi) - Math.log10(xlo))) * pw;
  const sy = (v: number): number => M.top + ph - ((Math.log10(Math.max(v, ylo)) - Math.log10(ylo)) / (Math.log10(yhi) - Math.log10(ylo))) * ph;
  const parts: string[] = [];
  parts.push(`<text x="${ox + W / 2}" y="${TITLE + 16}" text-anchor="middle" font-size="12">${esc(p.title)}</text>`);
  parts.push(`<rect x="${ox + M.left}" y="${M.top}" width="${pw}" height="${ph}" fill="none" stroke="#888"/>`);
  for (const t of logTicks(xlo, xhi)) {
    parts.push(`<line x1="${sx(t).toFixed(1)}" y1="${M.top}" x2="${sx(t).toFixed(1)}" y2="${M.top + ph}" stroke="#eee"/>`);
    parts.push(`<text x="${sx(t).toFixed(1)}" y="${M.top + ph + 14}" text-anchor="middle" font-size="10">${fmt(t)}</text>`);
  }
  for (const t of logTicks(ylo, yhi)) {
    parts.push(`<line x1="${ox + M.left}" y1="${sy(t).toFixed(1)}" x2="${ox + M.left + pw}" y2="${sy(t).toFixed(1)}" stroke="#eee"/>`);
    parts.push(`<text x="${ox + M.left - 4}" y="${(sy(t) + 3).toFixed(1)}" text-anchor="end" font-size="10">${fmt(t)}</text>`);
  }
  parts.push(`<text x="${ox + M.left + pw / 2}" y="${H - 8}" text-anchor="middle" font-size="11">${esc(p.xLabel)}</text>`);
  parts.push(`<text x="${ox + 12}" y="${M.top + ph / 2}" text-anchor="middle" font-size="11" transform="rotate(-90 ${ox + 12} ${M.top + ph / 2})">${esc(p.yLabel)}</text>`);
  if (p.diagonal) {
    const a = Math.max(xlo, ylo);
    const b = Math.min(xhi, yhi);
    if (b > a) parts.push(`<line x1="${sx(a).toFixed(1)}" y1="${sy(a).toFixed(1)}" x2="${sx(b).toFixed(1)}" y2="${sy(b).toFixed(1)}" stroke="#999" stroke-dasharray="4 3"/>`);
  }
  if (p.hline) {
    const y = sy(p.hline.y).toFixed(1);
    parts.push(`<line x1="${ox + M.left}" y1="${y}" x2="${ox + M.left + pw}" y2="${y}" stroke="#c33" stroke-dasharray="5 3"/>`);
    parts.push(`<text x="${ox + M.left + pw - 4}" y="${Number(y) - 4}" text-anchor="end" font-size="10" fill="#c33">${esc(p.hline.label)}</text>`);
  }
  if (p.mark) {
    const x = sx(p.mark.x).toFixed(1);
    parts.push(`<line x1="${x}" y1="${M.top}" x2="${x}" y2="${M.top + ph}" stroke="#393" stroke-dasharray="2 2"/>`);
    const right = Number(x) > ox + W - M.right - 40; // near the right edge: the label goes on the left of the line
    parts.push(`<text x="${Number(x) + (right ? -3 : 3)}" y="${M.top + 12}" font-size="10" fill="#393"${right ? ' text-anchor="end"' : ''}>${esc(p.mark.label)}</text>`);
  }
  const pts = p.points.filter((q) => q.x > 0).sort((a, b) => a.x - b.x);
  if (pts.length > 1) parts.push(`<polyline fill="none" stroke="#2663c9" stroke-width="2" points="${pts.map((q) => `${sx(q.x).toFixed(1)},${sy(q.y).toFixed(1)}`).join(' ')}"/>`);
  for (const q of pts) parts.push(`<circle cx="${sx(q.x).toFixed(1)}" cy="${sy(q.y).toFixed(1)}" r="3" fill="#2663c9"><title>${fmt(q.x)} → ${fmt(q.y)}</title></circle>`);
  return parts.join('\n');
}

/** Two panels side by side under one title, as one standalone SVG document. */
export function twoPanels(title: string, left: Panel, right: Panel): string {
  return [
    `<svg xmlns="http://www.w3.org/2000/svg" width="${2 * W}" height="${H}" viewBox="0 0 ${2 * W} ${H}" font-family="sans-serif">`,
    `<rect width="${2 * W}" height="${H}" fill="#fff"/>`,
    `<text x="${W}" y="16" text-anchor="middle" font-size="14" font-weight="bold">${esc(title)}</text>`,
    panel(left, 0),
    panel(right, W),
    '</svg>',
    '',
  ].join('\n');
}
