// `orch --version`: the version of the package this file belongs to. Found by walking up from this module to the
// first package.json named orch, so it holds wherever the code runs from (the sources through tsx, or a build).
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

export function packageVersion(from: string = path.dirname(fileURLToPath(import.meta.url))): string {
  for (let dir = from; ; dir = path.dirname(dir)) {
    try {
      const pkg = JSON.parse(readFileSync(path.join(dir, 'package.json'), 'utf8')) as { name?: unknown; version?: unknown };
      if (pkg.name === 'orch' && typeof pkg.version === 'string') return pkg.version;
    } catch {
      // no package.json here (or not ours): keep walking up
    }
    if (path.dirname(dir) === dir) return 'unknown';
  }
}
