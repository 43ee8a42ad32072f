// The detail column: an execution (facts, cancel / re-run, its timeline, the raw event stream on demand) or a
// workflow run (facts, cancel / re-run, the state machine with each state clickable to its output, an Agent state's
// execution one click away, the blackboard as a tree).
import { useEffect, useState } from 'preact/hooks';
import { api, type Feed, type Msg } from './feed.ts';
import { StateGraph } from './graph.tsx';
import { ExecutionTimeline } from './timeline.tsx';
import { errorText } from './actions.tsx';
import type { Execution, Selection, Workflow } from './types.ts';

export function Badge({ status }: { status: string }) {
  return <span class={`badge s-${status}`}>{status.replaceAll('_', ' ')}</span>;
}

const SHOWN = 100;

export function EventStream({ feed, stream }: { feed: Feed; stream: string }) {
  const [events, setEvents] = useState<Msg[]>([]);
  useEffect(() => {
    // The newest SHOWN events, redrawn at most every 250 ms: a chatty execution must not cost a render per event.
    const buf: Msg[] = [];
    let timer: ReturnType<typeof setTimeout> | undefined;
    setEvents([]);
    const onMessage = (m: Msg): void => {
      buf.push(m);
      if (buf.length > SHOWN * 2) buf.splice(0, buf.length - SHOWN);
      if (!timer) timer = setTimeout(() => ((timer = undefined), setEvents(buf.slice(-SHOWN))), 250);
    };
    feed.subscribe(stream, onMessage);
    return () => {
      if (timer) clearTimeout(timer);
      feed.unsubscribe(stream, onMessage);
    };
  }, [feed, stream]);
  return (
    <div class="events" data-testid="event-stream">
      {events.length === 0 ? <div class="muted">no events yet</div> : null}
      {events.length >= SHOWN ? <div class="muted small">the newest {SHOWN} events shown</div> : null}
      {[...events].reverse().map((m) => {
        const type = Object.keys(m).find((k) => k !== 'stream' && k !== 'seq') ?? '?';
        const payload = m[type] as Record<string, unknown> | undefined;
        const detail = payload
          ? Object.entries(payload)
              .filter(([k]) => k !== 'execution_id')
              .map(([k, v]) => `${k}=${typeof v === 'string' ? v : JSON.stringify(v)}`)
              .join(' ')
          : '';
        return (
          <div class="event" key={m.seq} data-type={type}>
            <span class="seq">#{m.seq}</span> <b>{type}</b> <span class="detail">{detail.length > 240 ? `${detail.slice(0, 240)}…` : detail}</span>
          </div>
        );
      })}
    </div>
  );
}

/** A JSON value as a collapsible tree (objects and arrays open two levels deep). */
export function JsonTree({ value, name, depth = 0 }: { value: unknown; name?: string; depth?: number }) {
  if (value !== null && typeof value === 'object') {
    const entries = Array.isArray(value) ? value.map((v, i) => [String(i), v] as const) : Object.entries(value);
    return (
      <details class="tree" open={depth < 2} data-key={name}>
        <summary>
          {name !== undefined ? <span class="key">{name}</span> : null}
          <span class="muted">{Array.isArray(value) ? ` [${entries.length}]` : ` {${entries.length}}`}</span>
        </summary>
        {entries.map(([k, v]) => (
          <JsonTree value={v} name={k} depth={depth + 1} />
        ))}
      </details>
    );
  }
  return (
    <div class="leaf" data-key={name}>
      {name !== undefined ? <span class="key">{name}: </span> : null}
      <span class={`v-${value === null ? 'null' : typeof value}`}>{typeof value === 'string' ? `"${value}"` : String(value)}</span>
    </div>
  );
}

function useAction(): [string | undefined, (label: string, f: () => Promise<unknown>) => Promise<void>] {
  const [msg, setMsg] = useState<string>();
  const run = async (label: string, f: () => Promise<unknown>): Promise<void> => {
    setMsg(undefined);
    try {
      const r = (await f()) as { error?: string; cancelled?: boolean } | undefined;
      if (r && r.cancelled === false && r.error) setMsg(`${label}: ${r.error}`);
    } catch (err) {
      setMsg(`${label} failed: ${errorText(err)}`);
    }
  };
  return [msg, run];
}

const live = (status: string): boolean => status === 'pending' || status === 'running' || status === 'waiting_for_human_input';

export function ExecutionDetail({ token, feed, e, onSelect }: { token: string; feed: Feed; e: Execution; onSelect: (s: Selection) => void }) {
  const [msg, act] = useAction();
  const [raw, setRaw] = useState(false);
  return (
    <>
      <div class="panel-head">
        <h2>
          {e.agent_name} <span class="muted">v{e.agent_version}</span>
        </h2>
        <div class="actions">
          {live(e.status) ? (
            <button data-testid="cancel-execution" onClick={() => void act('cancel', () => api(token, 'POST', `/v1/executions/${e.execution_id}/cancel`))}>
              Cancel
            </button>
          ) : null}
          {e.agent_id ? (
            <button
              data-testid="rerun-execution"
              onClick={() =>
                void act('re-run', async () => {
                  const r = await api<{ execution_id: string }>(token, 'POST', '/v1/executions', { agent_id: e.agent_id, input: e.input });
                  onSelect({ kind: 'execution', id: r.execution_id });
                })
              }
            >
              Re-run
            </button>
          ) : null}
          <Badge status={e.status} />
        </div>
      </div>
      {msg ? <div class="error-box" data-testid="action-error">{msg}</div> : null}
      <dl class="facts">
        <dt>execution</dt>
        <dd class="mono" data-testid="detail-id">{e.execution_id}</dd>
        {e.tenant_id ? (
          <>
            <dt>tenant</dt>
            <dd>{e.tenant_id}</dd>
          </>
        ) : null}
        <dt>iteration</dt>
        <dd data-testid="detail-iteration">{e.iteration}</dd>
        <dt>tokens</dt>
        <dd>
          {e.usage.prompt_tokens} in / {e.usage.completion_tokens} out
        </dd>
        <dt>input</dt>
        <dd class="clip" title={e.input}>{e.input}</dd>
        {e.workflow_execution_id ? (
          <>
            <dt>workflow</dt>
            <dd>
              <button class="link mono" onClick={() => onSelect({ kind: 'workflow', id: e.workflow_execution_id! })}>
                {e.workflow_execution_id}
              </button>
            </dd>
          </>
        ) : null}
        {e.reason ? (
          <>
            <dt>reason</dt>
            <dd class="clip" title={e.reason}>{e.reason}</dd>
          </>
        ) : null}
      </dl>
      <h3>Timeline</h3>
      <ExecutionTimeline key={e.execution_id} token={token} feed={feed} id={e.execution_id} />
      <h3>
        Event stream{' '}
        <button class="link" data-testid="events-toggle" onClick={() => setRaw(!raw)}>
          {raw ? 'hide' : 'show'}
        </button>
      </h3>
      {raw ? <EventStream feed={feed} stream={`execution:${e.execution_id}`} /> : null}
    </>
  );
}

interface RunDetail {
  blackboard: Record<string, unknown>;
  state_outputs: Record<string, unknown>;
  input: unknown;
  tenant_id: string;
  workflow_id: string;
}

export function WorkflowDetail({ token, feed, w, onSelect }: { token: string; feed: Feed; w: Workflow; onSelect: (s: Selection) => void }) {
  const [msg, act] = useAction();
  const [detail, setDetail] = useState<RunDetail>();
  const [picked, setPicked] = useState<string>();
  // The run's blackboard and state outputs: read again when the run moves (its row in the feed changes).
  useEffect(() => {
    let alive = true;
    api<RunDetail>(token, 'GET', `/v1/workflows/executions/${w.execution_id}`)
      .then((d) => alive && setDetail(d))
      .catch(() => undefined);
    return () => void (alive = false);
  }, [token, w.execution_id, w.current_state, w.status, w.total_transitions]);
  const state = picked ? w.graph.states.find((s) => s.name === picked) : undefined;
  const out = picked ? detail?.state_outputs?.[picked] : undefined;
  const agentExec = out && typeof out === 'object' && typeof (out as { execution_id?: unknown }).execution_id === 'string' ? (out as { execution_id: string }).execution_id : undefined;
  return (
    <>
      <div class="panel-head">
        <h2>
          {w.workflow_name} <span class="muted">v{w.workflow_version}</span>
        </h2>
        <div class="actions">
          {live(w.status) ? (
            <button data-testid="cancel-workflow" onClick={() => void act('cancel', () => api(token, 'POST', `/v1/workflows/executions/${w.execution_id}/cancel`))}>
              Cancel
            </button>
          ) : null}
          <button
            data-testid="rerun-workflow"
            disabled={!detail}
            onClick={() =>
              void act('re-run', async () => {
                const r = await api<{ execution_id: string }>(token, 'POST', `/v1/workflows/${encodeURIComponent(w.workflow_name)}/run`, { input: detail?.input ?? {} });
                onSelect({ kind: 'workflow', id: r.execution_id });
              })
            }
          >
            Re-run
          </button>
          <Badge status={w.status} />
        </div>
      </div>
      {msg ? <div class="error-box" data-testid="action-error">{msg}</div> : null}
      <dl class="facts">
        <dt>run</dt>
        <dd class="mono" data-testid="detail-id">{w.execution_id}</dd>
        {detail?.tenant_id ? (
          <>
            <dt>tenant</dt>
            <dd>{detail.tenant_id}</dd>
          </>
        ) : null}
        <dt>state</dt>
        <dd data-testid="detail-state">{w.current_state}</dd>
        <dt>transitions</dt>
        <dd>{w.total_transitions}</dd>
        {w.error ? (
          <>
            <dt>error</dt>
            <dd class="clip" title={w.error}>{w.error}</dd>
          </>
        ) : null}
      </dl>
      <StateGraph key={w.execution_id} graph={w.graph} current={w.current_state} status={w.status} selected={picked} onState={(s) => setPicked(s === picked ? undefined : s)} />
      {state ? (
        <div class="state-panel" data-testid="state-panel" data-state={state.name}>
          <div class="panel-head">
            <b>
              {state.name} <span class="muted">{state.kind}</span>
            </b>
            {agentExec ? (
              <button class="link" data-testid="state-execution-link" onClick={() => onSelect({ kind: 'execution', id: agentExec })}>
                open its execution →
              </button>
            ) : null}
          </div>
          {out === undefined ? <div class="muted">no output yet</div> : <JsonTree value={out} name="output" />}
        </div>
      ) : (
        <div class="muted small">click a state for its output</div>
      )}
      <h3>Blackboard</h3>
      <div class="blackboard" data-testid="blackboard">
        {detail ? <JsonTree value={detail.blackboard ?? {}} name="blackboard" /> : <span class="muted">loading…</span>}
      </div>
      <h3>Event stream</h3>
      <EventStream feed={feed} stream={`workflow:${w.execution_id}`} />
    </>
  );
}
