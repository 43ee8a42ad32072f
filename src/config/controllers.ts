// `spec.cluster.controller`: the controllers a worker may join, in order of preference (docs/CLUSTER.md "Several
// controllers"). Written as one host:port, a YAML list of them, or a comma-separated string (so one `env:NAME`
// reference or ORCH_CLUSTER_CONTROLLER can carry the whole list). Every entry must be host:port with a dialable
// port, and no entry may appear twice: a duplicate would make the worker "fail over" to the controller it just lost.
import { ConfigError } from './errors.ts';
import { HOST_PORT_PATTERN } from './schema.ts';

const HOST_PORT = new RegExp(HOST_PORT_PATTERN);

/** What is wrong and where: `at` is appended to the key (`[1]` for a list item, ` (entry 2)` in a string). */
class ListProblem extends Error {
  constructor(
    readonly at: string,
    message: string,
  ) {
    super(message);
  }
}

function controllerList(value: unknown): string[] {
  let entries: { text: string; at: string }[];
  if (typeof value === 'string') {
    const parts = value.split(',').map((s) => s.trim());
    entries = parts.map((text, i) => ({ text, at: parts.length > 1 ? ` (entry ${i + 1})` : '' }));
  } else if (Array.isArray(value)) {
    entries = value.map((item, i) => {
      if (typeof item !== 'string') throw new ListProblem(`[${i}]`, 'must be host:port');
      return { text: item.trim(), at: `[${i}]` };
    });
  } else {
    throw new ListProblem('', 'must be host:port, a list of host:port, or a comma-separated string of them');
  }
  if (entries.length === 0) throw new ListProblem('', 'must name at least one controller');
  const seen = new Set<string>();
  for (const e of entries) {
    if (e.text === '') throw new ListProblem(e.at, 'is empty; expected host:port');
    if (!HOST_PORT.test(e.text)) throw new ListProblem(e.at, `must be host:port (got "${e.text}")`);
    const port = Number(e.text.slice(e.text.lastIndexOf(':') + 1));
    if (port < 1 || port > 65535) throw new ListProblem(e.at, `port must be 1..65535 (got "${e.text}")`);
    // Host names are case-insensitive: the same address spelled twice is still one controller.
    const id = e.text.toLowerCase();
    if (seen.has(id)) throw new ListProblem(e.at, `duplicate controller "${e.text}"`);
    seen.add(id);
  }
  return entries.map((e) => e.text);
}

/** The normalised list, or a ConfigError naming `key` and the entry at fault. */
export function parseControllers(value: unknown, key: string): string[] {
  try {
    return controllerList(value);
  } catch (err) {
    if (err instanceof ListProblem) throw new ConfigError(`${key}${err.at}`, err.message);
    throw err;
  }
}

/** For an environment variable or flag (the caller names it): a plain Error whose message says which entry. */
export function parseControllerString(raw: string): string[] {
  try {
    return controllerList(raw);
  } catch (err) {
    if (err instanceof ListProblem) throw new Error(`${err.at.trim() ? `${err.at.trim().replace(/^\((.*)\)$/, '$1')}: ` : ''}${err.message}`);
    throw err;
  }
}
