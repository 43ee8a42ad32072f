// Reading and printing an execution's event stream for people (`orch agent run`, `orch execution logs`). The
// printer keeps a little state so that each thing is said once: a failed command's stderr is already on screen as
// the iteration's output, so the failure line and the final reason point at it instead of printing it again.
import { CliError } from './output.ts';

export type EventJson = Record<string, Record<string, unknown>>;

/** Reads an SSE response and calls (and awaits) `onData` with each `data:` payload parsed as JSON; `true` from it stops reading. */
export async function readSse(res: Response, onData: (data: EventJson) => boolean | void | Promise<boolean | void>): Promise<void> {
  if (!res.body) throw new CliError('the stream has no body');
  const decoder = new TextDecoder();
  let buffer = '';
  for await (const chunk of res.body as unknown as AsyncIterable<Uint8Array>) {
    buffer += decoder.decode(chunk, { stream: true });
    let idx: number;
    while ((idx = buffer.indexOf('\n\n')) >= 0) {
      const block = buffer.slice(0, idx);
      buffer = buffer.slice(idx + 2);
      const data = block
        .split('\n')
        .filter((l) => l.startsWith('data:'))
        .map((l) => l.slice(5).trimStart())
        .join('\n');
      if (data && (await onData(JSON.parse(data) as EventJson)) === true) return;
    }
  }
}

interface ToolCallJson {
  name?: unknown;
  arguments?: unknown;
  ok?: unknown;
  duration_ms?: unknown;
  exit_code?: unknown;
  error?: unknown;
}

/** `1.4 s`, or `850 ms` under a second. */
export function formatDuration(ms: number): string {
  return ms < 1000 ? `${Math.round(ms)} ms` : `${(ms / 1000).toFixed(1)} s`;
}

function between(from: unknown, to: unknown): string {
  const a = typeof from === 'string' ? Date.parse(from) : NaN;
  const b = typeof to === 'string' ? Date.parse(to) : NaN;
  return Number.isFinite(a) && Number.isFinite(b) && b >= a ? ` after ${formatDuration(b - a)}` : '';
}

function indent(text: string): string {
  return `  ${text.trimEnd().split('\n').join('\n  ')}`;
}

/** One line per tool call: `tool cmd.run {"command":"node"} → exit 2 (41 ms)`. */
export function toolLine(c: ToolCallJson): string {
  const outcome = c.ok === true ? (typeof c.exit_code === 'number' ? `exit ${c.exit_code}` : 'ok') : `error ${String(c.error ?? '')}`;
  const took = typeof c.duration_ms === 'number' ? ` (${formatDuration(c.duration_ms)})` : '';
  return `  tool ${String(c.name)} ${String(c.arguments ?? '')} → ${outcome}${took}`;
}

export class ExecutionPrinter {
  private started = new Map<number, unknown>();
  /** What this iteration has printed as output (model text, command output). */
  private shown = '';
  private lastFailure = '';

  /** The lines to print for one event (none for an event with nothing to say). */
  lines(variant: string, v: Record<string, unknown>): string[] {
    const n = typeof v.iteration_number === 'number' ? v.iteration_number : 0;
    switch (variant) {
      case 'execution_started':
        return [typeof v.execution_id === 'string' ? `execution ${v.execution_id} started` : 'execution started'];
      case 'iteration_started':
        this.started.set(n, v.started_at);
        this.shown = '';
        return [`iteration ${n} started`];
      case 'iteration_output': {
        const text = String(v.output ?? '');
        this.shown += `${text}\n`;
        return [indent(text)];
      }
      case 'iteration_completed':
        return [...this.tools(v), `iteration ${n} completed${between(this.started.get(n), v.completed_at)}`];
      case 'iteration_failed': {
        const e = v.error as { error_type?: string; message?: string } | undefined;
        this.lastFailure = e?.message ?? '';
        return [...this.tools(v), `iteration ${n} failed${between(this.started.get(n), v.failed_at)}: ${e?.error_type ?? ''} ${this.once(this.lastFailure)}`];
      }
      case 'refinement_applied':
        return [`refinement applied after iteration ${n}`];
      case 'execution_completed':
        return [`completed after ${String(v.total_iterations)} iteration(s):`, String(v.final_output ?? '')];
      case 'execution_failed': {
        const reason = String(v.reason ?? '');
        // The loop's reason ends with the last iteration's failure, printed just above.
        if (this.lastFailure && reason.endsWith(`: ${this.lastFailure}`)) {
          return [`failed: ${reason.slice(0, -this.lastFailure.length - 2)} (the failure of iteration ${String(v.total_iterations)} is above)`];
        }
        return [`failed: ${reason}`];
      }
      default:
        return [variant];
    }
  }

  private tools(v: Record<string, unknown>): string[] {
    return Array.isArray(v.tool_calls) ? (v.tool_calls as ToolCallJson[]).map(toolLine) : [];
  }

  /** A failure message whose `stderr:` part the iteration already showed as output, with that part replaced. */
  private once(message: string): string {
    const at = message.indexOf('stderr:\n');
    if (at < 0) return message;
    const stderr = message.slice(at + 'stderr:\n'.length).trim();
    if (stderr && this.shown.includes(stderr)) return `${message.slice(0, at)}stderr shown above`;
    return message;
  }
}
