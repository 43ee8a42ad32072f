// YAML text → a plain value for the workflow manifest checks, or the syntax error with its line. Scalars that the
// schema wants as text but YAML reads as numbers or booleans (`version: 1.0`, `env: {PORT: 8080}`) keep the
// spelling the author wrote, so `1.10` is not silently the float 1.1.
import { isMap, isScalar, isSeq, type Document, type Node } from 'yaml';
import { parseYamlDocument, yamlValue } from '../../agents/manifest/common.ts';
import type { ManifestError } from './types.ts';

function asText(node: unknown, text: string): void {
  if (isScalar(node) && (typeof node.value === 'number' || typeof node.value === 'boolean') && node.range) {
    node.value = text.slice(node.range[0], node.range[1]).trim();
  }
}

function mapValues(node: unknown, text: string): void {
  if (!isMap(node)) return;
  for (const item of node.items) asText(item.value, text);
}

function keepScalarText(doc: Document, text: string): void {
  asText(doc.getIn(['metadata', 'version'], true), text);
  for (const key of ['labels', 'annotations', 'output_template']) mapValues(doc.getIn(['metadata', key], true), text);
  const states = doc.getIn(['spec', 'states'], true);
  if (!isMap(states)) return;
  for (const item of states.items) {
    const st = item.value as Node | null;
    if (!isMap(st)) continue;
    mapValues(st.get('env', true), text);
    const transitions = st.get('transitions', true);
    if (isSeq(transitions)) {
      for (const t of transitions.items) if (isMap(t)) asText(t.get('value', true), text);
    }
    const steps = st.get('steps', true);
    if (isSeq(steps)) for (const s of steps.items) if (isMap(s)) mapValues(s.get('env', true), text);
    const command = st.get('command', true);
    if (isSeq(command)) for (const c of command.items) asText(c, text);
  }
}

export function parseWorkflowYaml(text: string): { ok: true; value: unknown } | { ok: false; errors: ManifestError[] } {
  const parsed = parseYamlDocument(text);
  if (!parsed.ok) return { ok: false, errors: parsed.errors.map(({ field, message }) => ({ field, message })) };
  keepScalarText(parsed.doc, text);
  return yamlValue(parsed.doc);
}
