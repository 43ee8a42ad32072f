// An execution as a timeline, for the dashboard and anyone reading what an agent did: per iteration its start, end
// and duration, each model turn (tokens, the text, the tool calls it asked for) and each tool call (name, arguments,
// result, when it finished and roughly how long it took), the validation outcome with any judge scores, and the
// refinement fed back. Read-only, composed from what the loop already records: the event log (execution_events)
// and the journal (execution_journal, one row per model answer / tool result / judge verdict, each with its time).
//
// Durations of model turns and tool calls are measured between consecutive journal rows (the loop records each step
// as it finishes, one after the other), so they include the loop's own bookkeeping between steps: "about", not exact.
import type { Queryable } from '../../storage/db.ts';
import { readExecutionEvents } from './events.ts';
import type { LlmResponse } from '../llm/types.ts';
import type { ToolResult } from './tools.ts';

export interface TimelineModelTurn {
  kind: 'model';
  turn: number;
  at: string;
  duration_ms: number | null;
  prompt_tokens: number;
  completion_tokens: number;
  model: string | null;
  content: string | null;
  tool_calls: Array<{ id: string; name: string }>;
}

export interface TimelineToolCall {
  kind: 'tool';
  turn: number;
  index: number;
  at: string;
  duration_ms: number | null;
  name: string;
  arguments: unknown;
  ok: boolean;
  result: unknown;
}

export interface TimelineIteration {
  number: number;
  started_at: string | null;
  ended_at: string | null;
  duration_ms: number | null;
  status: 'running' | 'completed' | 'failed';
  output: string | null;
  error: { error_type: string; message: string } | null;
  /** Judge verdicts of semantic validation rules (score 0..1 and reasoning). */
  validation: Array<{ judge: string; score: number | null; reasoning: string | null }>;
  refinement: string | null;
  steps: Array<TimelineModelTurn | TimelineToolCall>;
}

export interface Timeline {
  execution_id: string;
  iterations: TimelineIteration[];
  usage: { prompt_tokens: number; completion_tokens: number };
}

interface JournalRow {
  step_key: string;
  kind: string;
  result: unknown;
  recorded_at: Date;
}

const LLM_KEY = /^it(\d+):llm(\d+)$/;
const TOOL_KEY = /^it(\d+):turn(\d+):tool(\d+)$/;
const JUDGE_KEY = /^it(\d+):judge:(.+)$/;

export async function readTimeline(db: Queryable, executionId: string): Promise<Timeline> {
  const events = await readExecutionEvents(db, executionId);
  const journal = (
    await db.query<JournalRow>('SELECT step_key, kind, result, recorded_at FROM execution_journal WHERE execution_id = $1 ORDER BY recorded_at, step_key', [executionId])
  ).rows;

  const its = new Map<number, TimelineIteration>();
  const it = (n: number): TimelineIteration => {
    let x = its.get(n);
    if (!x) {
      x = { number: n, started_at: null, ended_at: null, duration_ms: null, status: 'running', output: null, error: null, validation: [], refinement: null, steps: [] };
      its.set(n, x);
    }
    return x;
  };
  for (const e of events) {
    const p = e.payload;
    const n = typeof p.iteration_number === 'number' ? p.iteration_number : undefined;
    if (n === undefined) continue;
    const x = it(n);
    if (e.type === 'iteration_started') x.started_at = e.at;
    else if (e.type === 'iteration_completed') {
      x.ended_at = e.at;
      x.status = 'completed';
      x.output = typeof p.output === 'string' ? p.output : null;
    } else if (e.type === 'iteration_failed') {
      x.ended_at = e.at;
      x.status = 'failed';
      x.error = (p.error as TimelineIteration['error']) ?? null;
    } else if (e.type === 'refinement_applied') x.refinement = typeof p.code_diff === 'string' ? p.code_diff : null;
  }

  // Tool calls are named by the model turn that asked for them: keep each turn's calls to name the results.
  const asked = new Map<string, LlmResponse['tool_calls']>();
  const prevAt = new Map<number, number>();
  let promptTokens = 0;
  let completionTokens = 0;
  for (const r of journal) {
    const at = r.recorded_at.getTime();
    let m = LLM_KEY.exec(r.step_key);
    if (m) {
      const n = Number(m[1]);
      const x = it(n);
      const res = r.result as LlmResponse;
      const since = prevAt.get(n) ?? (x.started_at ? Date.parse(x.started_at) : undefined);
      asked.set(`${n}:${m[2]}`, res.tool_calls ?? []);
      promptTokens += res.usage?.prompt_tokens ?? 0;
      completionTokens += res.usage?.completion_tokens ?? 0;
      x.steps.push({
        kind: 'model',
        turn: Number(m[2]),
        at: r.recorded_at.toISOString(),
        duration_ms: since === undefined ? null : Math.max(0, at - since),
        prompt_tokens: res.usage?.prompt_tokens ?? 0,
        completion_tokens: res.usage?.completion_tokens ?? 0,
        model: res.model ?? null,
        content: res.content ?? null,
        tool_calls: (res.tool_calls ?? []).map((c) => ({ id: c.id, name: c.name })),
      });
      prevAt.set(n, at);
      continue;
    }
    m = TOOL_KEY.exec(r.step_key);
    if (m) {
      const n = Number(m[1]);
      const call = asked.get(`${n}:${m[2]}`)?.[Number(m[3])];
      const res = r.result as ToolResult;
      const since = prevAt.get(n);
      it(n).steps.push({
        kind: 'tool',
        turn: Number(m[2]),
        index: Number(m[3]),
        at: r.recorded_at.toISOString(),
        duration_ms: since === undefined ? null : Math.max(0, at - since),
        name: call?.name ?? '?',
        arguments: call?.arguments ?? null,
        ok: res?.ok === true,
        result: res?.ok ? res.value : (res?.error ?? null),
      });
      prevAt.set(n, at);
      continue;
    }
    m = JUDGE_KEY.exec(r.step_key);
    if (m) {
      const v = r.result as { score?: unknown; reasoning?: unknown } | null;
      it(Number(m[1])).validation.push({
        judge: m[2]!,
        score: typeof v?.score === 'number' ? v.score : null,
        reasoning: typeof v?.reasoning === 'string' ? v.reasoning : null,
      });
    }
  }
  for (const x of its.values()) {
    if (x.started_at && x.ended_at) x.duration_ms = Date.parse(x.ended_at) - Date.parse(x.started_at);
  }
  return {
    execution_id: executionId,
    iterations: [...its.values()].sort((a, b) => a.number - b.number),
    usage: { prompt_tokens: promptTokens, completion_tokens: completionTokens },
  };
}
