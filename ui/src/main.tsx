// The orch dashboard (/ui): live executions, workflows on their state machine, cluster nodes and pending approvals,
// all from the /v1/ws feed; every action through the /v1 API with the token the page was given. Live lists are
// virtualized; the history lists page through the API, so thousands of rows keep the page light.
import { render } from 'preact';
import { useCallback, useEffect, useMemo, useRef, useState } from 'preact/hooks';
import { api, Feed, type Msg, type Status } from './feed.ts';
import { ApprovalCard, DeployPanel, StartPanel, errorText } from './actions.tsx';
import { Badge, ExecutionDetail, WorkflowDetail } from './details.tsx';
import { History } from './history.tsx';
import { Definitions } from './definitions.tsx';
import { LiveStats, Overview } from './overview.tsx';
import { ago, shortId, type Approval, type Execution, type NodeRow, type Selection, type Workflow } from './types.ts';
import './style.css';

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

interface Me {
  subject: string;
  roles: string[];
  tenant_id: string;
}

function App({ token }: { token: string }) {
  const [status, setStatus] = useState<Status>('connecting');
  const [, setTick] = useState(0);
  const data = useRef({ executions: new Map<string, Execution>(), workflows: new Map<string, Workflow>(), approvals: new Map<string, Approval>(), nodes: new Map<string, NodeRow>() });
  const [selection, setSelection] = useState<Selection>();
  const [execTab, setExecTab] = useState<'all' | 'active' | 'history'>('all');
  const [wfTab, setWfTab] = useState<'live' | 'history'>('live');
  const [sideTab, setSideTab] = useState<'start' | 'deploy'>('start');
  const [view, setView] = useState<'operate' | 'overview' | 'definitions'>(() =>
    location.hash.includes('overview') ? 'overview' : location.hash.includes('definitions') ? 'definitions' : 'operate',
  );
  // A definition's Start link: the operate view with the start panel on it (a counter, so the same one twice re-picks).
  const [startPreset, setStartPreset] = useState<{ target: string; n: number }>();
  const live = useRef(new LiveStats());
  const [tick, setTickValue] = useState(0);
  const [error, setError] = useState<string>();
  const [me, setMe] = useState<Me>();
  // Bumped when a list changes, so an open history page re-reads (coalesced to one read a second).
  const [changes, setChanges] = useState(0);
  // The list streams whose first snapshot has arrived: until all have, the page says "loading", not "live" and zeros.
  const loaded = useRef(new Set<string>());
  const feed = useMemo(() => new Feed(token, setStatus), [token]);

  useEffect(() => {
    // Renders are coalesced to at most one per 150 ms: a busy cluster sends hundreds of rows a second, a person
    // reads a few updates a second, and each render re-sorts the lists.
    let frame = 0;
    let pending: ReturnType<typeof setTimeout> | undefined;
    let lastRender = 0;
    let changeTimer: ReturnType<typeof setTimeout> | undefined;
    const render = (): void => {
      pending = undefined;
      frame = requestAnimationFrame(() => ((frame = 0), (lastRender = performance.now()), setTick((t) => t + 1)));
    };
    const bump = (): void => {
      if (frame || pending) return;
      pending = setTimeout(render, Math.max(0, 150 - (performance.now() - lastRender)));
    };
    const changed = (): void => {
      if (!changeTimer) changeTimer = setTimeout(() => ((changeTimer = undefined), setChanges((c) => c + 1)), 1000);
    };
    const d = data.current;
    const stats = live.current;
    const list = (stream: string, map: Map<string, never>, key: string): void =>
      feed.subscribe(stream, (m) => {
        applyList(map, m, key);
        if (stream === 'executions') {
          if (Array.isArray(m.snapshot)) {
            for (const r of m.snapshot as Execution[]) stats.observe(r);
            stats.primed = true;
          } else if (m.upsert && typeof m.upsert === 'object') stats.observe(m.upsert as Execution);
        }
        if (Array.isArray(m.snapshot)) loaded.current.add(stream);
        if (stream === 'executions' || stream === 'workflows') changed();
        bump();
      });
    list('executions', d.executions as never, 'execution_id');
    list('workflows', d.workflows as never, 'execution_id');
    list('approvals', d.approvals as never, 'id');
    list('nodes', d.nodes as never, 'node_id');
    const clock = setInterval(() => (bump(), setTickValue((x) => x + 1)), 5000);
    api<Me>(token, 'GET', '/v1/whoami')
      .then(setMe)
      .catch(() => undefined);
    return () => {
      clearInterval(clock);
      if (changeTimer) clearTimeout(changeTimer);
      if (pending) clearTimeout(pending);
      if (frame) cancelAnimationFrame(frame);
      feed.close();
    };
  }, [feed, token]);

  const d = data.current;
  const executions = [...d.executions.values()]
    .filter((e) => execTab !== 'active' || e.status === 'running' || e.status === 'pending')
    .sort((a, b) => b.created_at.localeCompare(a.created_at));
  const workflows = [...d.workflows.values()].sort((a, b) => b.created_at.localeCompare(a.created_at));
  const approvals = [...d.approvals.values()].sort((a, b) => a.created_at.localeCompare(b.created_at));
  const nodes = [...d.nodes.values()].sort((a, b) => a.node_id.localeCompare(b.node_id));
  const running = [...d.executions.values()].filter((e) => e.status === 'running').length;
  const operator = me?.roles.includes('operator') || me?.roles.includes('admin');
  // Executions waiting to start, as the feed has them now (the overview's live queue depth).
  const pendingCount = useCallback((): number => {
    let n = 0;
    for (const e of data.current.executions.values()) if (e.status === 'pending') n++;
    return n;
  }, []);

  const drain = async (n: NodeRow): Promise<void> => {
    setError(undefined);
    if (!window.confirm(`Drain ${n.node_id}? It takes no new work; running executions finish.`)) return;
    try {
      await api(token, 'POST', `/v1/cluster/nodes/${encodeURIComponent(n.node_id)}/drain`, { reason: 'drained from the dashboard' });
    } catch (err) {
      setError(`drain failed: ${errorText(err)}`);
    }
  };

  const undrain = async (n: NodeRow): Promise<void> => {
    setError(undefined);
    try {
      await api(token, 'POST', `/v1/cluster/nodes/${encodeURIComponent(n.node_id)}/undrain`, { reason: 'undrained from the dashboard' });
    } catch (err) {
      setError(`undrain failed: ${errorText(err)}`);
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

  // A selected row may be only in the history (not the live snapshot): fetch it.
  const [fetched, setFetched] = useState<{ e?: Execution; w?: Workflow }>({});
  useEffect(() => {
    if (!selection) return;
    const have = selection.kind === 'execution' ? d.executions.has(selection.id) : d.workflows.has(selection.id);
    if (have) return;
    let alive = true;
    const url = selection.kind === 'execution' ? `/v1/executions/${selection.id}` : `/v1/workflows/executions/${selection.id}`;
    api<Execution & Workflow>(token, 'GET', url)
      .then(async (row) => {
        if (!alive) return;
        if (selection.kind === 'execution') return setFetched({ e: row });
        // A run's detail has no graph: the feed's row shape has it; take the definition's states.
        const def = await api<{ manifest?: { spec?: { initial_state?: string; states?: Record<string, { kind: string; transitions?: Array<{ target: string; condition?: string }> }> } } }>(
          token,
          'GET',
          `/v1/workflows/${encodeURIComponent(row.workflow_name)}?version=${encodeURIComponent(row.workflow_version)}`,
        ).catch(() => undefined);
        const states = Object.entries(def?.manifest?.spec?.states ?? {}).map(([name, s]) => ({
          name,
          kind: s.kind,
          targets: (s.transitions ?? []).map((t) => ({ target: t.target, condition: t.condition ?? 'always' })),
        }));
        if (alive) setFetched({ w: { ...row, graph: { initial_state: def?.manifest?.spec?.initial_state ?? null, states } } });
      })
      .catch((err: unknown) => alive && setError(`open ${selection.id}: ${errorText(err)}`));
    return () => void (alive = false);
  }, [selection, token, changes]);

  const selExec = selection?.kind === 'execution' ? (d.executions.get(selection.id) ?? (fetched.e?.execution_id === selection.id ? fetched.e : undefined)) : undefined;
  const selWf = selection?.kind === 'workflow' ? (d.workflows.get(selection.id) ?? (fetched.w?.execution_id === selection.id ? fetched.w : undefined)) : undefined;

  return (
    <div class="app">
      <header>
        <h1>orch</h1>
        <span class={`conn c-${shown}`} data-testid="connection">
          {shown}
        </span>
        <div class="views">
          <button data-testid="operate-tab" class={view === 'operate' ? 'on' : ''} onClick={() => setView('operate')}>
            operate
          </button>
          <button data-testid="overview-tab" class={view === 'overview' ? 'on' : ''} onClick={() => setView('overview')}>
            overview
          </button>
          <button data-testid="definitions-tab" class={view === 'definitions' ? 'on' : ''} onClick={() => setView('definitions')}>
            definitions
          </button>
        </div>
        <span class="stat" data-testid="stats">
          {ready
            ? `${d.executions.size >= 1000 ? `${d.executions.size}+ recent` : d.executions.size} executions · ${running} running · ${d.workflows.size} workflows · ${approvals.length} pending approvals · ${nodes.length} nodes`
            : status === 'unauthorized'
              ? 'the token was refused'
              : 'loading…'}
        </span>
        {me ? (
          <span class="who muted" data-testid="whoami" title={me.roles.join(', ')}>
            {me.subject} · {me.tenant_id}
          </span>
        ) : null}
        {error ? (
          <span class="error" data-testid="page-error">
            {error}
          </span>
        ) : null}
      </header>
      {view === 'overview' ? <Overview token={token} live={live.current} nodes={d.nodes} pending={pendingCount} tick={tick} operator={!!operator} /> : null}
      {view === 'definitions' ? (
        <Definitions
          token={token}
          onStart={(target) => {
            setStartPreset((p) => ({ target, n: (p?.n ?? 0) + 1 }));
            setSideTab('start');
            setView('operate');
          }}
        />
      ) : null}
      <main style={view !== 'operate' ? { display: 'none' } : undefined}>
        <section class="col lists">
          <div class="panel grow">
            <div class="panel-head">
              <h2>Executions</h2>
              <div class="tabs">
                <button class={execTab === 'all' ? 'on' : ''} onClick={() => setExecTab('all')}>
                  all
                </button>
                <button class={execTab === 'active' ? 'on' : ''} onClick={() => setExecTab('active')}>
                  running
                </button>
                <button data-testid="exec-history-tab" class={execTab === 'history' ? 'on' : ''} onClick={() => setExecTab('history')}>
                  history
                </button>
              </div>
            </div>
            {execTab === 'history' ? (
              <History token={token} kind="execution" selection={selection} onSelect={setSelection} refresh={changes} />
            ) : (
              <>
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
                      title={`${e.execution_id} · input: ${e.input}`}
                      onClick={() => setSelection({ kind: 'execution', id: e.execution_id })}
                    >
                      <Badge status={e.status} />
                      <span class="name">
                        <span class="agent">{e.agent_name}</span> <span class="mono muted">{shortId(e.execution_id)}</span> <span class="input muted">{e.input}</span>
                      </span>
                      <span class="iter" title="iteration">
                        it {e.iteration}
                      </span>
                      <span class="muted">{ago(e.created_at)}</span>
                    </button>
                  )}
                />
              </>
            )}
          </div>
          <div class="panel grow">
            <div class="panel-head">
              <h2>Workflows</h2>
              <div class="tabs">
                <button class={wfTab === 'live' ? 'on' : ''} onClick={() => setWfTab('live')}>
                  live
                </button>
                <button data-testid="wf-history-tab" class={wfTab === 'history' ? 'on' : ''} onClick={() => setWfTab('history')}>
                  history
                </button>
              </div>
            </div>
            {wfTab === 'history' ? (
              <History token={token} kind="workflow" selection={selection} onSelect={setSelection} refresh={changes} />
            ) : (
              <>
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
                      title={w.execution_id}
                      onClick={() => setSelection({ kind: 'workflow', id: w.execution_id })}
                    >
                      <Badge status={w.status} />
                      <span class="name">
                        <span class="agent">{w.workflow_name}</span> <span class="mono muted">{shortId(w.execution_id)}</span>
                      </span>
                      <span class="iter">{w.current_state}</span>
                      <span class="muted">{ago(w.created_at)}</span>
                    </button>
                  )}
                />
              </>
            )}
          </div>
        </section>
        <section class="col detail panel" data-testid="detail">
          {selExec ? (
            <ExecutionDetail token={token} feed={feed} e={selExec} onSelect={setSelection} />
          ) : selWf ? (
            <WorkflowDetail token={token} feed={feed} w={selWf} onSelect={setSelection} />
          ) : selection ? (
            <div class="loading muted">
              <span class="spinner" /> loading…
            </div>
          ) : (
            <div class="empty muted">Select an execution or a workflow to see its timeline{workflows.length ? ' and state machine' : ''}.</div>
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
                <ApprovalCard
                  key={a.id}
                  token={token}
                  a={a}
                  label={`${d.workflows.get(a.execution_id)?.workflow_name ?? shortId(a.execution_id)} · ${a.state_name} · ${ago(a.created_at)} ago`}
                  onShow={() => setSelection({ kind: 'workflow', id: a.execution_id })}
                />
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
                  <th>cpu</th>
                  <th>mem</th>
                  <th>beat</th>
                  {operator ? <th /> : null}
                </tr>
              </thead>
              <tbody>
                {nodes.map((n) => (
                  <tr data-testid={`node-${n.node_id}`} data-status={n.status}>
                    <td class="clip" title={`${n.node_id} (${n.role})`}>
                      {n.node_id}
                    </td>
                    <td>
                      <Badge status={n.status.toLowerCase()} />
                    </td>
                    <td>{typeof n.load?.cpu_utilization_percent === 'number' ? `${Math.round(n.load.cpu_utilization_percent)}%` : '–'}</td>
                    <td>{typeof n.load?.memory_utilization_percent === 'number' ? `${Math.round(n.load.memory_utilization_percent)}%` : '–'}</td>
                    <td class="muted">{ago(n.last_heartbeat_at)}</td>
                    {operator ? (
                      <td>
                        {n.status === 'ACTIVE' ? (
                          <button class="link" data-testid={`drain-${n.node_id}`} onClick={() => void drain(n)}>
                            drain
                          </button>
                        ) : n.status === 'DRAINING' ? (
                          <button class="link" data-testid={`undrain-${n.node_id}`} onClick={() => void undrain(n)}>
                            undrain
                          </button>
                        ) : null}
                      </td>
                    ) : null}
                  </tr>
                ))}
              </tbody>
            </table>
          </div>
          <div class="panel">
            <div class="panel-head">
              <div class="tabs">
                <button data-testid="start-tab" class={sideTab === 'start' ? 'on' : ''} onClick={() => setSideTab('start')}>
                  start
                </button>
                <button data-testid="deploy-tab" class={sideTab === 'deploy' ? 'on' : ''} onClick={() => setSideTab('deploy')}>
                  deploy
                </button>
              </div>
            </div>
            {sideTab === 'start' ? <StartPanel token={token} onStarted={setSelection} preset={startPreset} /> : <DeployPanel token={token} />}
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
