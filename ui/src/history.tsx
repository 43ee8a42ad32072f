// Executions and workflow runs beyond the live list: pages of 50 from the /v1 API with filters (status, agent or
// workflow) and a search by id, so 10,000 rows are one click per page away and the page only ever holds 50.
// Rows carry the short id, the input and the tenant, so identical-looking runs can be told apart.
import { useEffect, useState } from 'preact/hooks';
import { api } from './feed.ts';
import { ago, shortId, type AgentSummary, type Execution, type Selection, type Workflow, type WorkflowSummary } from './types.ts';

const PAGE = 50;
const EXEC_STATUSES = ['pending', 'running', 'completed', 'failed', 'cancelled'];
const WF_STATUSES = ['running', 'waiting_for_human_input', 'completed', 'failed', 'cancelled'];
// What can begin an id: hex digits with hyphens where ids have them (the server checks the same).
const ID_PREFIX = /^[0-9a-f]{1,8}(-[0-9a-f]{0,4}(-[0-9a-f]{0,4}(-[0-9a-f]{0,4}(-[0-9a-f]{0,12})?)?)?)?$/i;

type Row = (Execution | Workflow) & { tenant_id?: string; input?: unknown };

export function History({ token, kind, selection, onSelect, refresh }: { token: string; kind: 'execution' | 'workflow'; selection: Selection; onSelect: (s: Selection) => void; refresh: number }) {
  const [status, setStatus] = useState('');
  const [owner, setOwner] = useState('');
  const [search, setSearch] = useState('');
  const [page, setPage] = useState(0);
  const [rows, setRows] = useState<Row[] | undefined>();
  const [error, setError] = useState<string>();
  const [owners, setOwners] = useState<Array<{ id: string; name: string }>>([]);

  useEffect(() => {
    const load = async (): Promise<void> => {
      try {
        if (kind === 'execution') setOwners((await api<{ agents: AgentSummary[] }>(token, 'GET', '/v1/agents')).agents.map((a) => ({ id: a.agent_id, name: a.name })));
        else setOwners((await api<{ workflows: WorkflowSummary[] }>(token, 'GET', '/v1/workflows')).workflows.map((w) => ({ id: w.name, name: w.name })));
      } catch {
        setOwners([]);
      }
    };
    void load();
  }, [token, kind]);

  useEffect(() => {
    let alive = true;
    const load = async (): Promise<void> => {
      setError(undefined);
      try {
        // Search by id: the first characters of an id (the server answers an index range scan, id_prefix), paged
        // like the rest. An id names one row whatever the filters say, so they do not apply while searching.
        const term = search.trim();
        if (term && !ID_PREFIX.test(term)) return void (alive && (setRows([]), setError('search takes the start of an id (hex digits, e.g. the first 8)')));
        const q = new URLSearchParams({ limit: String(PAGE), offset: String(page * PAGE) });
        if (term) q.set('id_prefix', term);
        else {
          if (status) q.set('status', status);
          if (owner) q.set(kind === 'execution' ? 'agent_id' : 'workflow_id', owner);
        }
        const res = await api<{ executions: Row[] }>(token, 'GET', `${kind === 'execution' ? '/v1/executions' : '/v1/workflows/executions'}?${q}`);
        if (alive) setRows(res.executions);
      } catch (err) {
        if (alive) setError((err as Error).message);
      }
    };
    void load();
    return () => void (alive = false);
  }, [token, kind, status, owner, search, page, refresh]);

  const p = kind === 'execution' ? 'hx' : 'hw';
  return (
    <div class="history" data-testid={`history-${kind}`}>
      <div class="filters">
        <select data-testid={`${p}-status`} value={status} onChange={(e) => (setStatus((e.target as HTMLSelectElement).value), setPage(0))}>
          <option value="">any status</option>
          {(kind === 'execution' ? EXEC_STATUSES : WF_STATUSES).map((s) => (
            <option value={s}>{s.replaceAll('_', ' ')}</option>
          ))}
        </select>
        <select data-testid={`${p}-owner`} value={owner} onChange={(e) => (setOwner((e.target as HTMLSelectElement).value), setPage(0))}>
          <option value="">{kind === 'execution' ? 'any agent' : 'any workflow'}</option>
          {owners.map((o) => (
            <option value={o.id}>{o.name}</option>
          ))}
        </select>
        <input data-testid={`${p}-search`} placeholder="id…" value={search} onInput={(e) => (setSearch((e.target as HTMLInputElement).value), setPage(0))} />
      </div>
      {error ? <div class="error-box">{error}</div> : null}
      {rows === undefined ? (
        <div class="loading muted">
          <span class="spinner" /> loading…
        </div>
      ) : (
        <div class="hrows" data-testid={`${p}-rows`} data-count={rows.length} data-page={page}>
          {rows.length === 0 ? <div class="muted">no rows</div> : null}
          {rows.map((r) => {
            const name = 'agent_name' in r ? r.agent_name : (r as Workflow).workflow_name;
            const input = typeof r.input === 'string' ? r.input : r.input === undefined || r.input === null ? '' : JSON.stringify(r.input);
            return (
              <button
                class={`row hrow ${selection?.id === r.execution_id ? 'sel' : ''}`}
                data-testid={`${p}-${r.execution_id}`}
                data-status={r.status}
                onClick={() => onSelect({ kind, id: r.execution_id })}
                title={`${r.execution_id}${r.tenant_id ? ` · tenant ${r.tenant_id}` : ''}`}
              >
                <span class={`badge s-${r.status}`}>{r.status.replaceAll('_', ' ')}</span>
                <span class="name">
                  <span class="agent">{name}</span> <span class="mono muted">{shortId(r.execution_id)}</span>
                  <span class="input muted">{input}</span>
                </span>
                <span />
                <span class="muted">{ago(r.created_at)}</span>
              </button>
            );
          })}
        </div>
      )}
      <div class="pager">
        <button data-testid={`${p}-newer`} disabled={page === 0} onClick={() => setPage(page - 1)}>
          ‹ newer
        </button>
        <span class="muted" data-testid={`${p}-range`}>
          {rows && rows.length ? `${page * PAGE + 1}–${page * PAGE + rows.length}` : ''}
        </span>
        <button data-testid={`${p}-older`} disabled={!rows || rows.length < PAGE} onClick={() => setPage(page + 1)}>
          older ›
        </button>
      </div>
    </div>
  );
}
