// Config locations: ajv reports JSON pointers (`/spec/http/port`); people read dotted keys (`spec.http.port`,
// `spec.llm_providers[0].name`). Both are derived from the same segment list so they always agree.

export function pointerOf(segments: readonly (string | number)[]): string {
  return segments.map((s) => `/${String(s).replace(/~/g, '~0').replace(/\//g, '~1')}`).join('');
}

export function segmentsOf(pointer: string): string[] {
  if (pointer === '') return [];
  return pointer
    .slice(1)
    .split('/')
    .map((s) => s.replace(/~1/g, '/').replace(/~0/g, '~'));
}

/** `/spec/llm_providers/0/name` → `spec.llm_providers[0].name`; the document root is `(root)`. */
export function keyOf(pointer: string): string {
  let out = '';
  for (const seg of segmentsOf(pointer)) out += /^\d+$/.test(seg) ? `[${seg}]` : out === '' ? seg : `.${seg}`;
  return out === '' ? '(root)' : out;
}

export function childPointer(pointer: string, key: string | number): string {
  return pointer + pointerOf([key]);
}

/** Replaces the value at `pointer` inside `doc` (which must exist). */
export function setAt(doc: unknown, pointer: string, value: unknown): void {
  const segs = segmentsOf(pointer);
  const last = segs.pop();
  if (last === undefined) return;
  let node = doc as Record<string, unknown>;
  for (const s of segs) node = node[s] as Record<string, unknown>;
  node[last] = value;
}
