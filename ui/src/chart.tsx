// One uPlot time-series chart (uPlot: ~50 KB, canvas, built for streaming data). Created once per mount, fed new
// columns with setData (no re-creation per update), resized with its box.
import { useEffect, useRef } from 'preact/hooks';
import uPlot from 'uplot';
import 'uplot/dist/uPlot.min.css';

export interface SeriesSpec {
  label: string;
  color: string;
  /** Axis scale: 'y' (default) or a second one such as 'ms'. */
  scale?: string;
  dash?: number[];
}

export function Chart({ title, series, data, testid, unit }: { title: string; series: SeriesSpec[]; data: uPlot.AlignedData; testid: string; unit?: string }) {
  const box = useRef<HTMLDivElement>(null);
  const plot = useRef<uPlot>();
  const key = series.map((s) => s.label).join('|');
  useEffect(() => {
    const el = box.current;
    if (!el) return;
    const u = new uPlot(
      {
        width: Math.max(200, el.clientWidth),
        height: 150,
        legend: { show: true, live: false },
        cursor: { drag: { x: false, y: false } },
        scales: { x: { time: true } },
        axes: [{ stroke: '#6b7585', grid: { stroke: '#eef0f3' } }, { stroke: '#6b7585', grid: { stroke: '#eef0f3' }, size: 44, ...(unit ? { label: unit, labelSize: 14 } : {}) }],
        series: [{}, ...series.map((s) => ({ label: s.label, stroke: s.color, width: 1.6, points: { size: 5 }, ...(s.dash ? { dash: s.dash } : {}), spanGaps: true }))],
      },
      data,
      el,
    );
    plot.current = u;
    const ro = new ResizeObserver(() => u.setSize({ width: Math.max(200, el.clientWidth), height: 150 }));
    ro.observe(el);
    return () => {
      ro.disconnect();
      u.destroy();
      plot.current = undefined;
    };
  }, [key]);
  useEffect(() => {
    plot.current?.setData(data);
  }, [data]);
  return (
    <div class="chart panel" data-testid={testid} data-points={data[0]?.length ?? 0}>
      <h3>{title}</h3>
      <div ref={box} class="chart-box" />
    </div>
  );
}
