// A fresh PGlite data dir costs an initdb inside WebAssembly (3-4 s here); loading a dump of a freshly initialised
// cluster costs about 1 s. The first fresh database of an install is made the slow way and its dump is kept as a
// template under node_modules/.cache/orch (keyed by PGlite's version); every later fresh data dir starts from it.
// The template holds nothing but initdb's output: it is taken before migrations or any data are written.
import { existsSync } from 'node:fs';
import { mkdir, readFile, rename, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import type { PGlite } from '@electric-sql/pglite';

let cachedKey: string | undefined;

/** PGlite's version, read from its package.json (its exports do not expose the file to require). */
async function pgliteVersion(): Promise<string> {
  if (cachedKey) return cachedKey;
  let dir = path.dirname(fileURLToPath(import.meta.resolve('@electric-sql/pglite')));
  for (let i = 0; i < 4; i++) {
    const file = path.join(dir, 'package.json');
    if (existsSync(file)) {
      const pkg = JSON.parse(await readFile(file, 'utf8')) as { name?: string; version?: string };
      if (pkg.name === '@electric-sql/pglite' && pkg.version) return (cachedKey = pkg.version);
    }
    dir = path.dirname(dir);
  }
  return (cachedKey = 'unknown');
}

/** Where templates live: ORCH_CACHE_DIR when the edge sets it, else node_modules/.cache/orch of this checkout. */
export function templateDir(override?: string): string {
  return override ?? path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../../node_modules/.cache/orch');
}

export async function templateFile(dir?: string): Promise<string> {
  return path.join(templateDir(dir), `pglite-${await pgliteVersion()}.tar.gz`);
}

/** True when `dataDir` holds no cluster yet (initdb has not run there). */
export function isFreshDataDir(dataDir: string): boolean {
  return !existsSync(path.join(dataDir, 'PG_VERSION'));
}

/** The template as a Blob for PGlite's `loadDataDir`, or undefined when none has been made yet. */
export async function loadTemplate(dir?: string): Promise<Blob | undefined> {
  const file = await templateFile(dir);
  if (!existsSync(file)) return undefined;
  try {
    // PGlite decides whether to gunzip by the blob's type.
    return new Blob([await readFile(file)], { type: 'application/x-gzip' });
  } catch {
    return undefined;
  }
}

/** Dumps a just-initialised PGlite as the template; written to a temp name then renamed, so readers see all or none. */
export async function saveTemplate(pglite: PGlite, dir?: string): Promise<void> {
  const file = await templateFile(dir);
  const dump = await pglite.dumpDataDir('gzip');
  await mkdir(path.dirname(file), { recursive: true });
  const tmp = `${file}.${process.pid}.${Date.now()}.tmp`;
  await writeFile(tmp, Buffer.from(await dump.arrayBuffer()));
  await rename(tmp, file);
}
