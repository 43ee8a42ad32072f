// The references between states (a transition's target, spec.initial_state), checked on the raw manifest even when
// the JSON Schema pass failed. The semantic pass that normally checks them needs a schema-valid manifest, so before
// issue 15 a typo in one state's `kind` hid a transition to a state that does not exist: the author fixed one and
// deployed again to learn of the other. These checks need only names, so they run on whatever parts are well-formed.
import type { ManifestError } from './types.ts';

export function unknownTargetMessage(target: string): string {
  return `names no state: "${target}" is not in spec.states`;
}

export function unknownInitialStateMessage(initial: string, states: Iterable<string>): string {
  return `names no state: "${initial}" is not in spec.states (states: ${[...states].join(', ')})`;
}

function isObject(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

/** Reference errors of a manifest the schema refused; parts too malformed to read are skipped (the schema said why). */
export function referenceErrors(raw: unknown): ManifestError[] {
  if (!isObject(raw) || !isObject(raw.spec) || !isObject(raw.spec.states)) return [];
  const states = raw.spec.states;
  const names = new Set(Object.keys(states));
  const errors: ManifestError[] = [];
  const initial = raw.spec.initial_state;
  if (typeof initial === 'string' && !names.has(initial)) errors.push({ field: 'spec.initial_state', message: unknownInitialStateMessage(initial, names) });
  for (const [name, st] of Object.entries(states)) {
    if (!isObject(st) || !Array.isArray(st.transitions)) continue;
    st.transitions.forEach((t: unknown, i) => {
      if (isObject(t) && typeof t.target === 'string' && !names.has(t.target)) {
        errors.push({ field: `spec.states.${name}.transitions[${i}].target`, message: unknownTargetMessage(t.target) });
      }
    });
  }
  return errors;
}
