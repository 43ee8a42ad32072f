// The orch dashboard (/ui): live executions, workflows on their state machine, cluster nodes and pending approvals,
// all from the /v1/ws feed; approve / reject through the HTTP API. Lists are virtualized, so thousands of rows keep
// the page light.
import { render } from 'preact';
import { useEffect, useMemo, useRef, useState } from 'preact/hooks';
import { api, Feed, type Msg, type Status } from './feed.ts';
import { StateGraph, type Graph } from './graph.tsx';
import './style.css';

interface Execution {
  execution_id: string;
  agent_name: string;
  agent_version: string;
  status: string;
  iteration: number;
  input: string;
  reason: string | null;
  workflow_execution_id: string | null;
  usage: { prompt_tokens: number; completion_tokens: number };
  created_at: string;
  completed_at: string | null;
}
interface Workflow {
  execution_id: string;
  workflow_name: string;
  workflow_version: string;
  status: string;
  current_state: string | null;
  total_transitions: number;
  error: string | null;
  graph: Graph;
  created_at: string;
  completed_at: string | null;
}
interface Approval {
  id: string;
  execution_id: string;
  state_name: string;
  prompt: string;
  created_at: string;
  deadline: string | null;
}
interface NodeRow {
  node_id: string;
  role: string;
  status: string;
  load: Record<string, unknown> | null;
  heartbeat_count: number;
  last_heartbeat_at: string | null;
}

type Selection = { kind: 'execution' | 'workflow'; id: string } | undefined;

const ROW = 30;

function takeToken(): string | undefined {
  const m = /(?:^|[#&])token=([^&]+)/.exec(location.hash);
  if (m?.[1]) {
    const token = decodeURIComponent(m[1]);
    sessionStorage.setItem('orch.token', token);
    history.replaceState(null, '', location.pathname + location.search);
    return token;
  }
  return sessionStorage.getItem('orch.token') ?? undefined;
}

function ago(iso: string | null): string {
  if (!iso) return '';
  const s = Math.max(0, Math.round((Date.now() - Date.parse(iso)) / 1000));
  if (s < 60) return `${s}s`;
  if (s < 3600) return `${Math.floor(s / 60)}m`;
  if (s < 86400) return `${Math.floor(s / 3600)}h`;
  return `${Math.floor(s / 86400)}d`;
}

/** Applies a list stream's snapshot / upsert / remove messages to a map keyed by `key`. */
function applyList<T extends Record<string, unknown>>(map: Map<string, T>, m: Msg, key: string): void {
  if (Array.isArray(m.snapshot)) {
    map.clear();
    for (const r of m.snapshot as T[]) map.set(String(r[key]), r);
  } else if (m.upsert && typeof m.upsert === 'object') {
    const r = m.upsert as T;
    map.set(String(r[key]), r);
  } else if (typeof m.remove === 'string') {
    map.delete(m.remove);
  }
}

function Login({ onToken }: { onToken: (t: string) => void }) {
  const [value, setValue] = useState('');
  return (
    <div class="login">
      <h1>orch</h1>
      <p>Paste a bearer token (for a local node: the dev token printed by <code>orch up</code>).</p>
      <form
        onSubmit={(e) => {
          e.preventDefault();
          if (value.trim()) {
            sessionStorage.setItem('orch.token', value.trim());
            onToken(value.trim());
          }
        }}
      >
        <input data-testid="token-input" type="password" value={value} onInput={(e) => setValue((e.target as HTMLInputElement).value)} placeholder="eyJ…" />
        <button type="submit">Open</button>
      </form>
    </div>
  );
}

/** A list that renders only the rows in view (fixed row height). */
function VirtualList<T>({ items, render: renderRow, testid }: { items: T[]; render: (item: T) => preact.JSX.Element; testid: string }) {
  const ref = useRef<HTMLDivElement>(null);
  const [scroll, setScroll] = useState(0);
  const [height, setHeight] = useState(400);
  useEffect(() => {
    const el = ref.current;
    if (!el) return;
    const ro = new ResizeObserver(() => setHeight(el.clientHeight));
    ro.observe(el);
    setHeight(el.clientHeight);
    return () => ro.disconnect();
  }, []);
  const first = Math.max(0, Math.floor(scroll / ROW) - 5);
  const last = Math.min(items.length, Math.ceil((scroll + height) / ROW) + 5);
  return (
    <div class="vlist" ref={ref} data-testid={testid} data-count={items.length} onScroll={(e) => setScroll((e.target as HTMLDivElement).scrollTop)}>
      <div style={{ height: `${items.length * ROW}px`, position: 'relative' }}>
        {items.slice(first, last).map((item, i) => (
          <div class="vrow" style={{ top: `${(first + i) * ROW}px`, height: `${ROW}px` }}>
            {renderRow(item)}
          </div>
        ))}
      </div>
    </div>
  );
}

function Badge({ status }: { status: string }) {
  return <span class={`badge s-${status}`}>{status.replaceAll('_', ' ')}</span>;
}

function EventStream({ feed, stream }: { feed: Feed; stream: string }) {
  const [events, setEvents] = useState<Msg[]>([]);
  useEffect(() => {
    const buf: Msg[] = [];
    let frame = 0;
    setEvents([]);
    feed.subscribe(stream, (m) => {
      buf.push(m);
      if (buf.length > 500) buf.splice(0, buf.length - 500);
      if (!frame) frame = requestAnimationFrame(() => ((frame = 0), setEvents([...buf])));
    });
    return () => {
      if (frame) cancelAnimationFrame(frame);
      feed.unsubscribe(stream);
    };
  }, [feed, stream]);
  return (
    <div class="events" data-testid="event-stream">
      {events.length === 0 ? <div class="muted">no events yet</div> : null}
      {[...events].reverse().map((m) => {
        const type = Object.keys(m).find((k) => k !== 'stream' && k !== 'seq') ?? '?';
        const payload = m[type] as Record<string, unknown> | undefined;
        const detail = payload
          ? Object.entries(payload)
              .filter(([k]) => !['execution_id', 'state_name', 'iteration_number'].includes(k) || payload[k] !== null)
              .filter(([k]) => k !== 'execution_id')
              .map(([k, v]) => `${k}=${typeof v === 'string' ? v : JSON.stringify(v)}`)
              .join(' ')
          : '';
        return (
          <div class="event" data-type={type}>
            <span class="seq">#{m.seq}</span> <b>{type}</b> <span class="detail">{detail.length > 240 ? `${detail.slice(0, 240)}…` : detail}</span>
          </div>
        );
      })}
    </div>
  );
}

function App({ token }: { token: string }) {
  const [status, setStatus] = useState<Status>('connecting');
  const [, setTick] = useState(0);
  const data = useRef({ executions: new Map<string, Execution>(), workflows: new Map<string, Workflow>(), approvals: new Map<string, Approval>(), nodes: new Map<string, NodeRow>() });
  const [selection, setSelection] = useState<Selection>();
  const [filter, setFilter] = useState<'all' | 'active'>('all');
  const [error, setError] = useState<string>();
  // The list streams whose first snapshot has arrived: until all have, the page says "loading", not "live" and zeros.
  const loaded = useRef(new Set<string>());
  const feed = useMemo(() => new Feed(token, setStatus), [token]);

  useEffect(() => {
    let frame = 0;
    const bump = (): void => {
      if (!frame) frame = requestAnimationFrame(() => ((frame = 0), setTick((t) => t + 1)));
    };
    const d = data.current;
    const list = (stream: string, map: Map<string, never>, key: string): void =>
      feed.subscribe(stream, (m) => {
        applyList(map, m, key);
        if (Array.isArray(m.snapshot)) loaded.current.add(stream);
        bump();
      });
    list('executions', d.executions as never, 'execution_id');
    list('workflows', d.workflows as never, 'execution_id');
    list('approvals', d.approvals as never, 'id');
    list('nodes', d.nodes as never, 'node_id');
    const clock = setInterval(bump, 5000);
    return () => {
      clearInterval(clock);
      feed.close();
    };
  }, [feed]);

  const d = data.current;
  const executions = [...d.executions.values()]
    .filter((e) => filter === 'all' || e.status === 'running' || e.status === 'pending')
    .sort((a, b) => b.created_at.localeCompare(a.created_at));
  const workflows = [...d.workflows.values()].sort((a, b) => b.created_at.localeCompare(a.created_at));
  const approvals = [...d.approvals.values()].sort((a, b) => a.created_at.localeCompare(b.created_at));
  const nodes = [...d.nodes.values()].sort((a, b) => a.node_id.localeCompare(b.node_id));
  const running = [...d.executions.values()].filter((e) => e.status === 'running').length;

  const decide = async (a: Approval, approve: boolean): Promise<void> => {
    setError(undefined);
    try {
      if (approve) await api(token, 'POST', `/v1/human-approvals/${a.id}/approve`, { approved_by: 'dashboard' });
      else {
        const reason = window.prompt(`Reject "${a.prompt}": reason`, 'rejected from the dashboard');
        if (!reason) return;
        await api(token, 'POST', `/v1/human-approvals/${a.id}/reject`, { reason, rejected_by: 'dashboard' });
      }
    } catch (err) {
      setError(`${approve ? 'approve' : 'reject'} failed: ${(err as Error).message}`);
    }
  };

  const ready = loaded.current.size === 4;
  const shown: Status | 'loading' = status === 'live' && !ready ? 'loading' : status;
  const loading = (what: string) =>
    loaded.current.has(what) ? null : (
      <div class="loading muted" data-testid={`loading-${what}`}>
        <span class="spinner" /> loading…
      </div>
    );

  const selExec = selection?.kind === 'execution' ? d.executions.get(selection.id) : undefined;
  const selWf = selection?.kind === 'workflow' ? d.workflows.get(selection.id) : undefined;

  return (
    <div class="app">
      <header>
        <h1>orch</h1>
        <span class={`conn c-${shown}`} data-testid="connection">
          {shown}
        </span>
        <span class="stat" data-testid="stats">
          {ready
            ? `${d.executions.size} executions · ${running} running · ${d.workflows.size} workflows · ${approvals.length} pending approvals · ${nodes.length} nodes`
            : status === 'unauthorized'
              ? 'the token was refused'
              : 'loading…'}
        </span>
        {error ? <span class="error">{error}</span> : null}
      </header>
      <main>
        <section class="col lists">
          <div class="panel grow">
            <div class="panel-head">
              <h2>Executions</h2>
              <div class="tabs">
                <button class={filter === 'all' ? 'on' : ''} onClick={() => setFilter('all')}>all</button>
                <button class={filter === 'active' ? 'on' : ''} onClick={() => setFilter('active')}>running</button>
              </div>
            </div>
            {loading('executions')}
            <VirtualList
              testid="executions"
              items={executions}
              render={(e) => (
                <button
                  class={`row ${selection?.id === e.execution_id ? 'sel' : ''}`}
                  data-testid={`exec-${e.execution_id}`}
                  data-status={e.status}
                  data-iteration={e.iteration}
                  onClick={() => setSelection({ kind: 'execution', id: e.execution_id })}
                >
                  <Badge status={e.status} />
                  <span class="name">{e.agent_name}</span>
                  <span class="iter" title="iteration">it {e.iteration}</span>
                  <span class="muted">{ago(e.created_at)}</span>
                </button>
              )}
            />
          </div>
          <div class="panel grow">
            <div class="panel-head">
              <h2>Workflows</h2>
            </div>
            {loading('workflows')}
            <VirtualList
              testid="workflows"
              items={workflows}
              render={(w) => (
                <button
                  class={`row ${selection?.id === w.execution_id ? 'sel' : ''}`}
                  data-testid={`wf-${w.execution_id}`}
                  data-status={w.status}
                  data-state={w.current_state ?? ''}
                  onClick={() => setSelection({ kind: 'workflow', id: w.execution_id })}
                >
                  <Badge status={w.status} />
                  <span class="name">{w.workflow_name}</span>
                  <span class="iter">{w.current_state}</span>
                  <span class="muted">{ago(w.created_at)}</span>
                </button>
              )}
            />
          </div>
        </section>
        <section class="col detail panel" data-testid="detail">
          {selExec ? (
            <>
              <div class="panel-head">
                <h2>
                  {selExec.agent_name} <span class="muted">v{selExec.agent_version}</span>
                </h2>
                <Badge status={selExec.status} />
              </div>
              <dl class="facts">
                <dt>execution</dt>
                <dd class="mono">{selExec.execution_id}</dd>
                <dt>iteration</dt>
                <dd data-testid="detail-iteration">{selExec.iteration}</dd>
                <dt>tokens</dt>
                <dd>
                  {selExec.usage.prompt_tokens} in / {selExec.usage.completion_tokens} out
                </dd>
                <dt>input</dt>
                <dd class="clip">{selExec.input}</dd>
                {selExec.reason ? (
                  <>
                    <dt>reason</dt>
                    <dd class="clip">{selExec.reason}</dd>
                  </>
                ) : null}
              </dl>
              <h3>Event stream</h3>
              <EventStream feed={feed} stream={`execution:${selExec.execution_id}`} />
            </>
          ) : selWf ? (
            <>
              <div class="panel-head">
                <h2>
                  {selWf.workflow_name} <span class="muted">v{selWf.workflow_version}</span>
                </h2>
                <Badge status={selWf.status} />
              </div>
              <dl class="facts">
                <dt>run</dt>
                <dd class="mono">{selWf.execution_id}</dd>
                <dt>state</dt>
                <dd data-testid="detail-state">{selWf.current_state}</dd>
                <dt>transitions</dt>
                <dd>{selWf.total_transitions}</dd>
                {selWf.error ? (
                  <>
                    <dt>error</dt>
                    <dd class="clip">{selWf.error}</dd>
                  </>
                ) : null}
              </dl>
              <StateGraph key={selWf.execution_id} graph={selWf.graph} current={selWf.current_state} status={selWf.status} />
              <h3>Event stream</h3>
              <EventStream feed={feed} stream={`workflow:${selWf.execution_id}`} />
            </>
          ) : (
            <div class="empty muted">Select an execution or a workflow to see its event stream{workflows.length ? ' and state machine' : ''}.</div>
          )}
        </section>
        <section class="col side">
          <div class="panel">
            <div class="panel-head">
              <h2>Pending approvals</h2>
            </div>
            <div class="approvals" data-testid="approvals">
              {loading('approvals')}
              {approvals.length === 0 && loaded.current.has('approvals') ? <div class="muted">nothing waiting</div> : null}
              {approvals.map((a) => (
                <div class="approval" data-testid={`approval-${a.id}`} data-execution={a.execution_id}>
                  <div class="prompt">{a.prompt}</div>
                  <div class="muted small">
                    {d.workflows.get(a.execution_id)?.workflow_name ?? a.execution_id.slice(0, 8)} · {a.state_name} · {ago(a.created_at)} ago
                  </div>
                  <div class="buttons">
                    <button class="approve" data-testid={`approve-${a.id}`} onClick={() => void decide(a, true)}>
                      Approve
                    </button>
                    <button class="reject" data-testid={`reject-${a.id}`} onClick={() => void decide(a, false)}>
                      Reject
                    </button>
                    <button class="link" onClick={() => setSelection({ kind: 'workflow', id: a.execution_id })}>
                      show
                    </button>
                  </div>
                </div>
              ))}
            </div>
          </div>
          <div class="panel">
            <div class="panel-head">
              <h2>Cluster nodes</h2>
            </div>
            {loading('nodes')}
            <table class="nodes" data-testid="nodes">
              <thead>
                <tr>
                  <th>node</th>
                  <th>status</th>
                  <th>load</th>
                  <th>mem</th>
                  <th>beat</th>
                </tr>
              </thead>
              <tbody>
                {nodes.map((n) => (
                  <tr data-testid={`node-${n.node_id}`}>
                    <td class="clip" title={`${n.node_id} (${n.role})`}>
                      {n.node_id}
                    </td>
                    <td>
                      <Badge status={n.status.toLowerCase()} />
                    </td>
                    <td>{typeof n.load?.cpu_load_1m === 'number' ? n.load.cpu_load_1m.toFixed(2) : '–'}</td>
                    <td>{typeof n.load?.memory_utilization_percent === 'number' ? `${n.load.memory_utilization_percent}%` : '–'}</td>
                    <td class="muted">{ago(n.last_heartbeat_at)}</td>
                  </tr>
                ))}
              </tbody>
            </table>
          </div>
        </section>
      </main>
    </div>
  );
}

function Root() {
  const [token, setToken] = useState(takeToken);
  return token ? <App token={token} /> : <Login onToken={setToken} />;
}

render(<Root />, document.getElementById('app')!);
