// A module trace (test/support/module-trace.mjs) of a process that ran the bundle (scripts/bundle.mjs) lists chunks,
// not the files in them. dist/bundle/contents.json (written with the bundle) says which files each chunk holds, so
// a test can still ask which of orch's files and which npm packages a process loaded.
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { pathToFileURL } from 'node:url';

/**
 * The traced URLs with every chunk of `root`'s bundle replaced by the file URLs of what it holds (the chunk itself
 * kept too). Without a bundle the list is returned as it is.
 */
export function expandBundle(root: string, loaded: readonly string[]): string[] {
  const bundle = pathToFileURL(path.join(root, 'dist', 'bundle')).href + '/';
  let contents: Record<string, string[]>;
  try {
    contents = JSON.parse(readFileSync(path.join(root, 'dist', 'bundle', 'contents.json'), 'utf8')) as Record<string, string[]>;
  } catch {
    return [...loaded];
  }
  return loaded.flatMap((url) => {
    if (!url.startsWith(bundle)) return [url];
    const held = contents[url.slice(bundle.length)] ?? [];
    return [url, ...held.map((f) => pathToFileURL(path.join(root, f)).href)];
  });
}
