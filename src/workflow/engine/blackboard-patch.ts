// What a step changed on its run's blackboard, so the step writer can send those keys alone (StepWrite.blackboardPatch)
// rather than the whole blackboard at every step. The engine replaces the blackboard object at every change
// (run.ts advance: `{ ...before, [state]: output, ...patch }`) and never mutates one in place, so an unchanged key
// holds the very same value: comparing by reference finds the changed keys without walking their contents.

/**
 * The keys of `after` whose value is not the same as in `before`, or undefined when the change cannot be written as
 * `row || patch`: a key removed, or a value undefined (JSON leaves such a key out, so the whole blackboard would drop
 * it while a patch would keep the row's old value).
 */
export function blackboardPatch(before: Record<string, unknown>, after: Record<string, unknown>): Record<string, unknown> | undefined {
  if (before === after) return {};
  let kept = 0;
  const patch: Record<string, unknown> = {};
  for (const key of Object.keys(after)) {
    const value = after[key];
    if (value === undefined) return undefined;
    if (Object.hasOwn(before, key)) kept++;
    if (before[key] !== value || !Object.hasOwn(before, key)) patch[key] = value;
  }
  // Every key of before still present (after only adds and replaces), else it must be written whole.
  return kept === Object.keys(before).length ? patch : undefined;
}
