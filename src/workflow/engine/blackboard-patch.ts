// What a step changed on its run's blackboard, so the step writer can send those keys alone (StepWrite.blackboardPatch)
// rather than the whole blackboard at every step. The engine replaces the blackboard object at every change
// (run.ts advance: `{ ...before, [state]: output, ...patch }`) and never mutates one in place, so an unchanged key
// holds the very same value: comparing by reference finds the changed keys without walking their contents.

/**
 * A blackboard smaller than this (bytes of JSON) is still written whole. The race's (20 short keys, ~600 bytes) as a
 * patch cost PostgreSQL 0.9-2.0 ms more CPU per lone 10-step run (race-breakdown c = 1, five alternated pairs,
 * docs/BENCHMARKS.md; not explained: the statement alone in psql was the same either way), so small blackboards keep
 * the measured path and only large ones, whose whole rewrite is what grows, travel as patches.
 */
export const PATCH_MIN_BYTES = 4096;

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
