// Small helpers shared by the built-in tool definitions.
import type { ToolOutcome } from '../types.ts';

export const ok = (result: unknown): ToolOutcome => ({ ok: true, result });
export const fail = (error: string, message: string): ToolOutcome => ({ ok: false, error: { error, message } });

export function str(v: unknown): string {
  return typeof v === 'string' ? v : v === undefined || v === null ? '' : String(v);
}

export function int(v: unknown, def: number, min = Number.NEGATIVE_INFINITY, max = Number.POSITIVE_INFINITY): number {
  const n = typeof v === 'number' ? v : typeof v === 'string' && v.trim() !== '' ? Number(v) : NaN;
  if (!Number.isFinite(n)) return def;
  return Math.min(max, Math.max(min, Math.trunc(n)));
}

export function bool(v: unknown, def: boolean): boolean {
  if (typeof v === 'boolean') return v;
  if (v === 'true') return true;
  if (v === 'false') return false;
  return def;
}

/** A JSON Schema object of string-typed properties (the common case). */
export function schema(props: Record<string, Record<string, unknown>>, required: string[] = []): Record<string, unknown> {
  return { type: 'object', properties: props, ...(required.length ? { required } : {}) };
}
