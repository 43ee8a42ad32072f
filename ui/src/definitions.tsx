// Definitions: the agents and workflows the token can see, each with its versions and the manifest of the chosen one
// (GET /v1/agents, /v1/agents/{id}/versions, /v1/agents/{id}?version=; GET /v1/workflows, /v1/workflows/{name}/versions,
// /v1/workflows/{name}?version=), and a Start link that opens the start panel with it chosen.
import { useEffect, useState } from 'preact/hooks';
import { api } from './feed.ts';
import { errorText } from './actions.tsx';
import { ago, type AgentSummary, type WorkflowSummary } from './types.ts';

export type DefinitionRef = { kind: 'agent'; id: string; name: string } | { kind: 'workflow'; id: string; name: string };

interface VersionInfo {
  version: string;
  current: boolean;
  deployed_by: string;
  created_at: string;
}

interface Detail {
  version: string;
  description?: string | null;
  manifest_yaml: string;
  manifest: { spec?: Record<string, unknown> };
}

export function Definitions({ token, onStart }: { token: string; onStart: (target: string) => void }) {
  const [agents, setAgents] = useState<AgentSummary[]>();
  const [workflows, setWorkflows] = useState<WorkflowSummary[]>();
  const [filter, setFilter] = useState('');
  const [picked, setPicked] = useState<DefinitionRef>();
  const [error, setError] = useState<string>();

  useEffect(() => {
    let alive = true;
    Promise.all([api<{ agents: AgentSummary[] }>(token, 'GET', '/v1/agents'), api<{ workflows: WorkflowSummary[] }>(token, 'GET', '/v1/workflows')])
      .then(([a, w]) => {
        if (!alive) return;
        setAgents([...a.agents].sort((x, y) => x.name.localeCompare(y.name)));
        setWorkflows([...w.workflows].sort((x, y) => x.name.localeCompare(y.name)));
      })
      .catch((err: unknown) => alive && setError(errorText(err)));
    return () => void (alive = false);
  }, [token]);

  const f = filter.trim().toLowerCase();
  const shownAgents = (agents ?? []).filter((a) => !f || a.name.toLowerCase().includes(f));
  const shownWorkflows = (workflows ?? []).filter((w) => !f || w.name.toLowerCase().includes(f));
  return (
    <main class="definitions" data-testid="definitions">
      <section class="col lists panel">
        <div class="panel-head">
          <h2>Definitions</h2>
          <input data-testid="def-filter" placeholder="name…" value={filter} onInput={(e) => setFilter((e.target as HTMLInputElement).value)} />
        </div>
        {error ? <div class="error-box">{error}</div> : null}
        {agents === undefined && !error ? (
          <div class="loading muted">
            <span class="spinner" /> loading…
          </div>
        ) : null}
        <h3>Agents</h3>
        <div data-testid="def-agents" data-count={shownAgents.length}>
          {shownAgents.length === 0 && agents ? <div class="muted">none</div> : null}
          {shownAgents.map((a) => (
            <button class={`row ${picked?.kind === 'agent' && picked.id === a.agent_id ? 'sel' : ''}`} data-testid={`def-agent-${a.name}`} onClick={() => setPicked({ kind: 'agent', id: a.agent_id, name: a.name })}>
              <span class="name">
                <span class="agent">{a.name}</span> <span class="muted">v{a.version}</span>
              </span>
            </button>
          ))}
        </div>
        <h3>Workflows</h3>
        <div data-testid="def-workflows" data-count={shownWorkflows.length}>
          {shownWorkflows.length === 0 && workflows ? <div class="muted">none</div> : null}
          {shownWorkflows.map((w) => (
            <button class={`row ${picked?.kind === 'workflow' && picked.name === w.name ? 'sel' : ''}`} data-testid={`def-workflow-${w.name}`} onClick={() => setPicked({ kind: 'workflow', id: w.id, name: w.name })}>
              <span class="name">
                <span class="agent">{w.name}</span> <span class="muted">v{w.version}</span>
              </span>
            </button>
          ))}
        </div>
      </section>
      <section class="col detail panel" data-testid="def-detail">
        {picked ? <DefinitionDetail key={`${picked.kind}:${picked.id}`} token={token} d={picked} onStart={onStart} /> : <div class="empty muted">Choose an agent or a workflow to see its versions and manifest.</div>}
      </section>
    </main>
  );
}

function DefinitionDetail({ token, d, onStart }: { token: string; d: DefinitionRef; onStart: (target: string) => void }) {
  const [versions, setVersions] = useState<VersionInfo[]>();
  const [version, setVersion] = useState<string>();
  const [detail, setDetail] = useState<Detail>();
  const [error, setError] = useState<string>();
  const base = d.kind === 'agent' ? `/v1/agents/${encodeURIComponent(d.id)}` : `/v1/workflows/${encodeURIComponent(d.name)}`;

  useEffect(() => {
    let alive = true;
    api<{ versions: Array<VersionInfo & { latest?: boolean }> }>(token, 'GET', `${base}/versions`)
      .then((r) => {
        if (!alive) return;
        // Agents mark the current version, workflows the latest: one flag for the page.
        const list = r.versions.map((v) => ({ ...v, current: v.current ?? v.latest ?? false }));
        setVersions(list);
        setVersion((list.find((v) => v.current) ?? list[0])?.version);
      })
      .catch((err: unknown) => alive && setError(errorText(err)));
    return () => void (alive = false);
  }, [token, base]);

  useEffect(() => {
    if (!version) return;
    let alive = true;
    setDetail(undefined);
    api<Detail>(token, 'GET', `${base}?version=${encodeURIComponent(version)}`)
      .then((r) => alive && setDetail(r))
      .catch((err: unknown) => alive && setError(errorText(err)));
    return () => void (alive = false);
  }, [token, base, version]);

  const target = d.kind === 'agent' ? `agent:${d.id}` : `workflow:${d.name}`;
  return (
    <div class="def-detail">
      <div class="detail-head">
        <h2 data-testid="def-name">
          {d.kind === 'agent' ? 'Agent' : 'Workflow'} {d.name}
        </h2>
        <button class="primary" data-testid="def-start" onClick={() => onStart(target)}>
          Start…
        </button>
      </div>
      {error ? <div class="error-box">{error}</div> : null}
      {detail?.description ? <p class="muted">{detail.description}</p> : null}
      <h3>Versions</h3>
      <table class="usage-table" data-testid="def-versions" data-count={versions?.length ?? 0}>
        <thead>
          <tr>
            <th>version</th>
            <th>deployed by</th>
            <th>deployed</th>
            <th />
          </tr>
        </thead>
        <tbody>
          {(versions ?? []).map((v) => (
            <tr data-testid={`def-version-${v.version}`} class={v.version === version ? 'sel' : ''}>
              <td>
                <button class="link" onClick={() => setVersion(v.version)}>
                  v{v.version}
                </button>
              </td>
              <td class="muted">{v.deployed_by}</td>
              <td class="muted">{ago(v.created_at)} ago</td>
              <td>{v.current ? <span class="badge s-completed">{d.kind === 'agent' ? 'current' : 'latest'}</span> : null}</td>
            </tr>
          ))}
        </tbody>
      </table>
      <h3>
        Manifest <span class="muted small">v{detail?.version ?? version}</span>
      </h3>
      {detail ? (
        <pre class="mono manifest" data-testid="def-manifest" data-version={detail.version}>
          {detail.manifest_yaml}
        </pre>
      ) : (
        <div class="loading muted">
          <span class="spinner" /> loading…
        </div>
      )}
    </div>
  );
}
