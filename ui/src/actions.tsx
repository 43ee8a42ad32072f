// What an operator does from the page, each through the /v1 API with the page's token (the server decides; a 403 is
// shown as it comes): start an agent or a workflow with input, deploy a manifest (YAML pasted, a 422's problems listed
// inline), and answer a pending approval with feedback.
import { useEffect, useState } from 'preact/hooks';
import { api, ApiError } from './feed.ts';
import type { AgentSummary, Approval, Selection, WorkflowSummary } from './types.ts';

export function errorText(err: unknown): string {
  return err instanceof ApiError ? `${err.status}: ${err.message}` : (err as Error).message;
}

/** A 422's manifest problems as lines (whatever shape `details` has). */
export function problemsOf(err: unknown): string[] {
  if (!(err instanceof ApiError)) return [];
  // Manifest 422s list their problems as `errors: [{field, message}]`; other errors may carry `details`.
  const d = (err.body.errors ?? err.body.details) as unknown;
  const list = Array.isArray(d) ? d : d && typeof d === 'object' ? (Object.values(d).find(Array.isArray) as unknown[] | undefined) : undefined;
  if (!list) return d && typeof d === 'object' ? [JSON.stringify(d)] : [];
  return list.map((x) => {
    if (typeof x === 'string') return x;
    const o = x as { path?: unknown; message?: unknown; field?: unknown };
    const where = o.path ?? o.field;
    return `${where !== undefined ? `${String(where)}: ` : ''}${o.message !== undefined ? String(o.message) : JSON.stringify(x)}`;
  });
}

export function StartPanel({ token, onStarted, preset }: { token: string; onStarted: (s: Selection) => void; preset?: { target: string; n: number } | undefined }) {
  const [agents, setAgents] = useState<AgentSummary[]>([]);
  const [workflows, setWorkflows] = useState<WorkflowSummary[]>([]);
  const [target, setTarget] = useState('');
  const [input, setInput] = useState('');
  const [busy, setBusy] = useState(false);
  const [msg, setMsg] = useState<{ ok: boolean; text: string }>();
  const reload = async (): Promise<void> => {
    const [a, w] = await Promise.all([
      api<{ agents: AgentSummary[] }>(token, 'GET', '/v1/agents').catch(() => ({ agents: [] })),
      api<{ workflows: WorkflowSummary[] }>(token, 'GET', '/v1/workflows').catch(() => ({ workflows: [] })),
    ]);
    setAgents(a.agents);
    setWorkflows(w.workflows);
  };
  useEffect(() => void reload(), [token]);
  // Chosen elsewhere (a definition's Start link): pick it, after a fresh list so a just-deployed one is an option.
  useEffect(() => {
    if (!preset) return;
    void reload().then(() => setTarget(preset.target));
  }, [preset]);
  const start = async (): Promise<void> => {
    setBusy(true);
    setMsg(undefined);
    try {
      const [kind, ref] = target.split(':', 2) as [string, string];
      if (kind === 'agent') {
        const r = await api<{ execution_id: string }>(token, 'POST', '/v1/executions', { agent_id: ref, input });
        setMsg({ ok: true, text: `started ${r.execution_id}` });
        onStarted({ kind: 'execution', id: r.execution_id });
      } else {
        let parsed: unknown = input;
        if (input.trim()) {
          try {
            parsed = JSON.parse(input);
          } catch {
            parsed = input;
          }
        } else parsed = {};
        const r = await api<{ execution_id: string }>(token, 'POST', `/v1/workflows/${encodeURIComponent(ref)}/run`, { input: parsed });
        setMsg({ ok: true, text: `started ${r.execution_id}` });
        onStarted({ kind: 'workflow', id: r.execution_id });
      }
    } catch (err) {
      setMsg({ ok: false, text: errorText(err) });
    } finally {
      setBusy(false);
    }
  };
  return (
    <div class="form" data-testid="start-panel">
      <select data-testid="start-target" value={target} onFocus={() => void reload()} onChange={(e) => setTarget((e.target as HTMLSelectElement).value)}>
        <option value="">choose an agent or workflow…</option>
        <optgroup label="agents">
          {agents.map((a) => (
            <option value={`agent:${a.agent_id}`}>
              {a.name} v{a.version}
            </option>
          ))}
        </optgroup>
        <optgroup label="workflows">
          {workflows.map((w) => (
            <option value={`workflow:${w.name}`}>
              {w.name} v{w.version}
            </option>
          ))}
        </optgroup>
      </select>
      <textarea data-testid="start-input" rows={2} placeholder="input (text for an agent, JSON for a workflow)" value={input} onInput={(e) => setInput((e.target as HTMLTextAreaElement).value)} />
      <button class="primary" data-testid="start-button" disabled={!target || busy} onClick={() => void start()}>
        Start
      </button>
      {msg ? (
        <div class={msg.ok ? 'ok-box' : 'error-box'} data-testid="start-result">
          {msg.text}
        </div>
      ) : null}
    </div>
  );
}

export function DeployPanel({ token }: { token: string }) {
  const [yaml, setYaml] = useState('');
  const [busy, setBusy] = useState(false);
  const [result, setResult] = useState<{ ok: boolean; text: string; problems: string[] }>();
  const deploy = async (): Promise<void> => {
    setBusy(true);
    setResult(undefined);
    const kind = /^\s*kind:\s*Workflow\b/m.test(yaml) ? 'workflows' : 'agents';
    try {
      const r = await api<Record<string, unknown>>(token, 'POST', `/v1/${kind}`, { manifest_yaml: yaml });
      setResult({ ok: true, text: `deployed ${String(r.name ?? r.agent_id ?? r.workflow_id ?? '')} ${r.version ? `v${String(r.version)}` : ''}`.trim(), problems: [] });
    } catch (err) {
      setResult({ ok: false, text: errorText(err), problems: problemsOf(err) });
    } finally {
      setBusy(false);
    }
  };
  return (
    <div class="form" data-testid="deploy-panel">
      <textarea data-testid="deploy-yaml" class="mono" rows={7} placeholder="apiVersion: orch.dev/v1&#10;kind: Agent | Workflow&#10;…" value={yaml} onInput={(e) => setYaml((e.target as HTMLTextAreaElement).value)} />
      <button class="primary" data-testid="deploy-button" disabled={!yaml.trim() || busy} onClick={() => void deploy()}>
        Deploy
      </button>
      {result ? (
        <div class={result.ok ? 'ok-box' : 'error-box'} data-testid="deploy-result" data-ok={String(result.ok)}>
          <div>{result.text}</div>
          {result.problems.length ? (
            <ul data-testid="deploy-problems">
              {result.problems.map((p) => (
                <li>{p}</li>
              ))}
            </ul>
          ) : null}
        </div>
      ) : null}
    </div>
  );
}

/** A pending approval: approve, or reject with feedback typed inline. */
export function ApprovalCard({ token, a, label, onShow }: { token: string; a: Approval; label: string; onShow: () => void }) {
  const [feedback, setFeedback] = useState('');
  const [rejecting, setRejecting] = useState(false);
  const [error, setError] = useState<string>();
  const decide = async (approve: boolean): Promise<void> => {
    setError(undefined);
    try {
      if (approve) await api(token, 'POST', `/v1/human-approvals/${a.id}/approve`, { approved_by: 'dashboard', ...(feedback.trim() ? { feedback: feedback.trim() } : {}) });
      else await api(token, 'POST', `/v1/human-approvals/${a.id}/reject`, { reason: feedback.trim() || 'rejected from the dashboard', rejected_by: 'dashboard' });
    } catch (err) {
      setError(`${approve ? 'approve' : 'reject'} failed: ${errorText(err)}`);
    }
  };
  return (
    <div class="approval" data-testid={`approval-${a.id}`} data-execution={a.execution_id}>
      <div class="prompt">{a.prompt}</div>
      <div class="muted small">{label}</div>
      <input data-testid={`feedback-${a.id}`} class="feedback" placeholder="feedback (optional; the reason when rejecting)" value={feedback} onInput={(e) => setFeedback((e.target as HTMLInputElement).value)} />
      <div class="buttons">
        <button class="approve" data-testid={`approve-${a.id}`} onClick={() => void decide(true)}>
          Approve
        </button>
        <button class="reject" data-testid={`reject-${a.id}`} onClick={() => (rejecting || feedback.trim() ? void decide(false) : setRejecting(true))}>
          {rejecting && !feedback.trim() ? 'Reject without a reason?' : 'Reject'}
        </button>
        <button class="link" onClick={onShow}>
          show
        </button>
      </div>
      {error ? <div class="error-box">{error}</div> : null}
    </div>
  );
}
