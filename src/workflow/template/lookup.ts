// Deep lookup of a template path, and the placeholder text of seed 002 ("Missing key") for a path that does not
// resolve. Handlebars resolves only the first segment of a path (so `this`, `../` and `@root` keep their meaning);
// the remaining segments are walked here, because a judge's output is JSON *text* and `{{review.agents.0.output.score}}`
// must reach into it.
import { RESERVED_SCOPE_KEYS } from './scope.ts';

export type Walk = { found: true; value: unknown } | { found: false; depth: number };

/** A judge or an agent often answers with the JSON inside a ```json fence; both forms are parsed. */
export function parseJsonText(text: string): unknown {
  const trimmed = text.trim();
  const fenced = /^```(?:json)?\s*\n?([\s\S]*?)\n?```$/i.exec(trimmed);
  const body = fenced?.[1] ?? trimmed;
  if (!body.startsWith('{') && !body.startsWith('[')) return undefined;
  try {
    return JSON.parse(body) as unknown;
  } catch {
    return undefined;
  }
}

/**
 * Walks `segments` from `root`. Only own properties are followed (never the prototype chain: `constructor`,
 * `__proto__` resolve to nothing). A string met before the last segment is parsed as JSON text.
 * `depth` of a miss is the number of segments that did resolve.
 */
export function walk(root: unknown, segments: readonly string[]): Walk {
  let current = root;
  if (current === undefined) return { found: false, depth: 0 };
  for (let i = 0; i < segments.length; i++) {
    const key = segments[i] as string;
    if (typeof current === 'string') current = parseJsonText(current);
    if (current === null || typeof current !== 'object' || !Object.hasOwn(current, key)) return { found: false, depth: i + 1 };
    current = (current as Record<string, unknown>)[key];
    if (current === undefined) return { found: false, depth: i + 1 };
  }
  return { found: true, value: current };
}

/**
 * The placeholder for an unresolved path: `<missing KEY: REASON>`, where the reason names the state that has not
 * completed (or the namespace that lacks the key). `atRoot` is false inside {{#each}}/{{#with}} blocks, where a
 * path is relative to the current item.
 */
export function missingPlaceholder(path: string, segments: readonly string[], resolved: number, atRoot: boolean): string {
  return `<missing ${path}: ${missingReason(segments, resolved, atRoot)}>`;
}

function missingReason(segments: readonly string[], resolved: number, atRoot: boolean): string {
  const [head, second] = segments;
  if (!atRoot || head === undefined) return `not defined in the current block context`;
  const rest = (from: number): string => segments.slice(from).join('.');
  if (!RESERVED_SCOPE_KEYS.includes(head)) {
    // A top-level name is a blackboard key: a state's output or a key seeded from context / caller pairs.
    return resolved === 0 ? `state "${head}" has not completed` : `state "${head}" has no "${rest(1)}"`;
  }
  switch (head) {
    case 'intent':
      return 'the execution was started without an intent';
    case 'input':
      return resolved === 0 ? 'the execution has no input' : `the workflow input has no "${rest(1)}"`;
    case 'blackboard':
      if (second === undefined) return 'the blackboard is not available';
      return resolved <= 1 ? `state "${second}" has not completed` : `state "${second}" has no "${rest(2)}"`;
    case 'workflow':
      if (second === 'context') return 'not in spec.context';
      if (second === 'storage') return 'not declared in spec.storage';
      return 'workflow has only context and storage';
    case 'state':
      return 'no incoming transition set feedback';
    case 'human':
      return 'no Human state has been answered';
    case 'execution':
      return 'execution has only id';
    default:
      return 'not defined';
  }
}
