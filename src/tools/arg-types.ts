// The top-level argument types a tool's inputSchema declares, checked before its handler runs. The handlers coerce
// leniently (a model may send `"10"` for an integer or `"true"` for a boolean, and they accept it), but a value of
// the wrong kind altogether was turned into text and went on: `fs.read {"path": 5}` read the path "5" and answered
// IsADirectory. Such a call is InvalidArguments (SEAL 422 / JSON-RPC -32602, seed 001 "Errors").

const NUMERIC = /^\s*-?\d+(\.\d+)?\s*$/;

function fits(type: string, v: unknown): boolean {
  switch (type) {
    case 'string':
      return typeof v === 'string';
    case 'integer':
      return (typeof v === 'number' && Number.isInteger(v)) || (typeof v === 'string' && NUMERIC.test(v) && Number.isInteger(Number(v)));
    case 'number':
      return (typeof v === 'number' && Number.isFinite(v)) || (typeof v === 'string' && NUMERIC.test(v));
    case 'boolean':
      return typeof v === 'boolean' || v === 'true' || v === 'false';
    case 'array':
      return Array.isArray(v);
    case 'object':
      return typeof v === 'object' && v !== null && !Array.isArray(v);
    default:
      return true;
  }
}

const WORDS: Record<string, string> = { string: 'a string', integer: 'an integer', number: 'a number', boolean: 'a boolean', array: 'a list', object: 'an object' };

/** The first argument whose value is not of its declared type, as a sentence; undefined when all fit. */
export function argumentTypeError(tool: string, inputSchema: Record<string, unknown>, args: Record<string, unknown>): string | undefined {
  const props = inputSchema.properties;
  if (typeof props !== 'object' || props === null) return undefined;
  for (const [field, prop] of Object.entries(props as Record<string, { type?: unknown }>)) {
    const v = args[field];
    if (v === undefined || v === null || typeof prop?.type !== 'string') continue;
    if (!fits(prop.type, v)) return `argument "${field}" of tool ${tool} must be ${WORDS[prop.type] ?? prop.type}`;
  }
  return undefined;
}
