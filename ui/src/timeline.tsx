// An execution's detail as a timeline (GET /v1/executions/{id}/timeline): iterations with their durations, each model
// turn with its tokens and each tool call with its arguments, result and time, the validation outcome and the
// refinement fed back. Refetched (coalesced) whenever the execution's event stream moves; raw JSON on demand.
import { useEffect, useState } from 'preact/hooks';
import { api, type Feed } from './feed.ts';
import { duration } from './types.ts';

interface Step {
  kind: 'model' | 'tool';
  turn: number;
  at: string;
  duration_ms: number | null;
  prompt_tokens?: number;
  completion_tokens?: number;
  model?: string | null;
  content?: string | null;
  tool_calls?: Array<{ id: string; name: string }>;
  index?: number;
  name?: string;
  arguments?: unknown;
  ok?: boolean;
  result?: unknown;
}
interface Iteration {
  number: number;
  started_at: string | null;
  ended_at: string | null;
  duration_ms: number | null;
  status: string;
  output: string | null;
  error: { error_type: string; message: string } | null;
  validation: Array<{ judge: string; score: number | null; reasoning: string | null }>;
  refinement: string | null;
  steps: Step[];
}
export interface TimelineData {
  execution_id: string;
  iterations: Iteration[];
  usage: { prompt_tokens: number; completion_tokens: number };
}

const json = (v: unknown): string => (typeof v === 'string' ? v : JSON.stringify(v, null, 2));
const oneLine = (v: unknown, max = 120): string => {
  const s = typeof v === 'string' ? v : JSON.stringify(v);
  return s.length > max ? `${s.slice(0, max - 1)}…` : s;
};

function ToolStep({ s }: { s: Step }) {
  const [open, setOpen] = useState(false);
  return (
    <div class={`step tool ${s.ok ? 'ok' : 'err'}`} data-testid="tool-call" data-tool={s.name}>
      <button class="step-head" onClick={() => setOpen(!open)}>
        <span class="glyph">⚙</span>
        <b class="mono">{s.name}</b>
        <span class="mono muted args">({oneLine(s.arguments, 80)})</span>
        <span class={`pill ${s.ok ? 'good' : 'bad'}`}>{s.ok ? 'ok' : 'error'}</span>
        <span class="muted when" title={s.at}>
          {duration(s.duration_ms)}
        </span>
      </button>
      {open ? (
        <div class="step-body" data-testid="tool-call-body">
          <div class="label">arguments</div>
          <pre>{json(s.arguments)}</pre>
          <div class="label">result</div>
          <pre>{json(s.result)}</pre>
        </div>
      ) : (
        <div class="mono muted result-line">→ {oneLine(s.result)}</div>
      )}
    </div>
  );
}

function ModelStep({ s }: { s: Step }) {
  return (
    <div class="step model" data-testid="model-turn">
      <div class="step-head">
        <span class="glyph">◆</span>
        <b>model</b>
        <span class="muted">turn {s.turn}</span>
        {s.model ? <span class="muted mono">{s.model}</span> : null}
        <span class="tokens" data-testid="turn-tokens">
          {s.prompt_tokens} in · {s.completion_tokens} out
        </span>
        <span class="muted when" title={s.at}>
          {duration(s.duration_ms)}
        </span>
      </div>
      {s.content ? <div class="content">{s.content.length > 600 ? `${s.content.slice(0, 600)}…` : s.content}</div> : null}
      {s.tool_calls?.length ? <div class="muted small">asked for {s.tool_calls.map((c) => c.name).join(', ')}</div> : null}
    </div>
  );
}

export function ExecutionTimeline({ token, feed, id }: { token: string; feed: Feed; id: string }) {
  const [data, setData] = useState<TimelineData>();
  const [error, setError] = useState<string>();
  const [raw, setRaw] = useState(false);
  useEffect(() => {
    let alive = true;
    let timer: ReturnType<typeof setTimeout> | undefined;
    let inFlight = false;
    let again = false;
    const load = async (): Promise<void> => {
      if (inFlight) return void (again = true);
      inFlight = true;
      try {
        const t = await api<TimelineData>(token, 'GET', `/v1/executions/${id}/timeline`);
        if (alive) (setData(t), setError(undefined));
      } catch (err) {
        if (alive) setError((err as Error).message);
      } finally {
        inFlight = false;
        if (again && alive) ((again = false), void load());
      }
    };
    void load();
    // Every event of the execution may add a step: refetch at most every 300 ms while it moves.
    // Step events (an iteration starting or ending, a refinement, the end) refetch within 300 ms; output chunks,
    // which a chatty agent sends by the hundred, at most every 2 s.
    let lastLoad = 0;
    const onEvent = (m: Record<string, unknown>): void => {
      if (timer) return;
      const chunk = 'iteration_output' in m;
      const wait = chunk ? Math.max(300, 2000 - (Date.now() - lastLoad)) : 300;
      timer = setTimeout(() => ((timer = undefined), (lastLoad = Date.now()), void load()), wait);
    };
    feed.subscribe(`execution:${id}`, onEvent);
    return () => {
      alive = false;
      if (timer) clearTimeout(timer);
      feed.unsubscribe(`execution:${id}`, onEvent);
    };
  }, [token, feed, id]);

  if (error && !data) return <div class="error-box">timeline: {error}</div>;
  if (!data)
    return (
      <div class="loading muted">
        <span class="spinner" /> loading timeline…
      </div>
    );
  return (
    <div class="timeline" data-testid="timeline">
      <div class="timeline-head">
        <span class="muted">
          {data.iterations.length} iteration{data.iterations.length === 1 ? '' : 's'} · {data.usage.prompt_tokens} prompt / {data.usage.completion_tokens} completion tokens
        </span>
        <button class="link" data-testid="raw-toggle" onClick={() => setRaw(!raw)}>
          {raw ? 'readable' : 'raw JSON'}
        </button>
      </div>
      {raw ? (
        <pre class="raw" data-testid="raw-json">
          {JSON.stringify(data, null, 2)}
        </pre>
      ) : (
        data.iterations.map((it) => (
          <div class={`iteration i-${it.status}`} data-testid={`iteration-${it.number}`} data-status={it.status}>
            <div class="iteration-head">
              <b>Iteration {it.number}</b>
              <span class={`badge s-${it.status}`}>{it.status}</span>
              <span class="muted" data-testid="iteration-duration">
                {it.duration_ms !== null ? duration(it.duration_ms) : it.started_at ? 'running…' : ''}
              </span>
            </div>
            {it.steps.map((s) => (s.kind === 'tool' ? <ToolStep s={s} /> : <ModelStep s={s} />))}
            {it.validation.map((v) => (
              <div class="step judge" data-testid="validation-score">
                <span class="glyph">✓</span> judge <b>{v.judge}</b> score <b>{v.score === null ? '–' : v.score.toFixed(2)}</b>
                {v.reasoning ? <span class="muted"> — {v.reasoning}</span> : null}
              </div>
            ))}
            {it.error ? (
              <div class="step failure" data-testid="iteration-error">
                <b>{it.error.error_type}</b>: <span class="pre">{it.error.message}</span>
              </div>
            ) : null}
            {it.status === 'completed' && it.output !== null ? (
              <div class="step output">
                <span class="label">output</span> <span class="pre">{it.output}</span>
              </div>
            ) : null}
            {it.refinement ? (
              <details class="step refinement" data-testid="refinement">
                <summary>refinement fed back</summary>
                <div class="pre">{it.refinement}</div>
              </details>
            ) : null}
          </div>
        ))
      )}
    </div>
  );
}
