// What an iteration's events say about its tool calls: name, clipped arguments, outcome and duration, carried on
// `iteration_completed` / `iteration_failed` as `tool_calls` (JSON renderings only, like `resume` on
// iteration_output; the proto messages keep their seed fields). `orch agent run` prints them, so a user sees what
// the model did without reading the journal. Arguments are clipped: a whole written file does not belong in an event.
import type { CmdResult, ToolResult } from './tools.ts';

/** Characters of a call's arguments (as JSON) kept in the event. */
export const TOOL_ARGS_MAX = 200;
/** Characters of a tool error's message kept in the event. */
const ERROR_MAX = 300;

export interface ToolCallSummary {
  name: string;
  arguments: string;
  ok: boolean;
  /** Time the tool took when it first ran (a journaled result replayed on resume keeps the original figure). */
  duration_ms?: number;
  /** cmd.run only: the command's exit code. */
  exit_code?: number;
  /** A failed call: `<error type>: <message>`. */
  error?: string;
}

/** A tool result as the journal records it: the duration rides along so a replay reports the first run's time. */
export type TimedToolResult = ToolResult & { duration_ms?: number };

function clip(s: string, max: number): string {
  return s.length <= max ? s : `${s.slice(0, max - 1)}…`;
}

export function summarizeToolCall(tool: string, args: Record<string, unknown>, result: TimedToolResult): ToolCallSummary {
  const summary: ToolCallSummary = { name: tool, arguments: clip(JSON.stringify(args) ?? '{}', TOOL_ARGS_MAX), ok: result.ok };
  if (typeof result.duration_ms === 'number') summary.duration_ms = result.duration_ms;
  if (result.ok) {
    const v = result.value as Partial<CmdResult> | null;
    if (tool === 'cmd.run' && v && typeof v.exit_code === 'number') summary.exit_code = v.exit_code;
  } else {
    summary.error = clip(`${result.error.error}: ${result.error.message}`, ERROR_MAX);
  }
  return summary;
}
