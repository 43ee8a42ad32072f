// A fresh PGlite data dir costs an initdb inside WebAssembly (3-4 s here); loading a dump of a freshly initialised
// cluster costs about 1 s. The first fresh database of an install is made the slow way and its dump is kept as a
// template under node_modules/.cache/orch (keyed by PGlite's version); every later fresh data dir starts from it.
// That template holds nothing but initdb's output: it is taken before migrations or any data are written.
//
// A second kind, the schema template, holds initdb's output plus every migration of this build and nothing else
// (issue 15: under load a test node spent most of ~51 s applying migrations one by one). Its name carries a hash of
// the migration files, so a new or changed migration never loads an old schema. It is dumped right after the
// migrations of a fresh data dir ran, before anything else can write (see openPglite's `schema` option).
import { execFile } from 'node:child_process';
import { createHash } from 'node:crypto';
import { existsSync } from 'node:fs';
import { cp, mkdir, readdir, readFile, rename, rm, unlink, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
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

/** The initdb template's file, or with `schemaKey` the schema template's. */
export async function templateFile(dir?: string, schemaKey?: string): Promise<string> {
  const version = await pgliteVersion();
  return path.join(templateDir(dir), schemaKey ? `pglite-${version}-schema-${schemaKey}.tar.gz` : `pglite-${version}.tar.gz`);
}

/** A short hash of the migration files (names and contents, in order): the key of the schema template. */
export async function schemaKey(files: ReadonlyArray<{ name: string; path: string }>): Promise<string> {
  const hash = createHash('sha256');
  for (const f of files) hash.update(`${f.name}\0`).update(await readFile(f.path)).update('\0');
  return hash.digest('hex').slice(0, 16);
}

/**
 * The schema template also as a plain data directory (`….d`, complete once its READY file exists; made by
 * `npm install`, see materializeSchemaDir in pglite.ts). Copying it natively costs a fraction of unpacking the
 * tarball through PGlite's WebAssembly file system, which was the largest part of a node's start.
 */
export async function schemaDirTemplate(dir: string | undefined, key: string): Promise<string> {
  return (await templateFile(dir, key)).replace(/\.tar\.gz$/, '.d');
}

/** Copies the directory template of `key` into the (empty) `dataDir`; false when there is none or the copy failed. */
export async function copySchemaDir(dir: string | undefined, key: string, dataDir: string): Promise<boolean> {
  const from = await schemaDirTemplate(dir, key);
  if (!existsSync(path.join(from, 'READY'))) return false;
  try {
    await copyTree(from, dataDir);
    await rm(path.join(dataDir, 'READY'), { force: true });
    return existsSync(path.join(dataDir, 'PG_VERSION'));
  } catch {
    // A half-made copy must not look like a data dir: start again from the tarball.
    await rm(dataDir, { recursive: true, force: true }).catch(() => undefined);
    await mkdir(dataDir, { recursive: true });
    return false;
  }
}

const execFileP = promisify(execFile);

/**
 * The contents of `from` into the directory `to`: by `cp -r` in a child process when there is one (the ~600 files,
 * ~1,200 before the template databases were dropped, cost about a second of CPU through fs.cp, on the thread that is
 * loading the node's modules meanwhile; issue 15 item 4), else by fs.cp.
 */
export async function copyTree(from: string, to: string): Promise<void> {
  try {
    await execFileP('cp', ['-r', '--', `${from}/.`, `${to}/`]);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'ENOENT') throw err;
    await cp(from, to, { recursive: true });
  }
}

/** Moves a cleanly closed data dir made from the schema tarball into place as the directory template of `key`. */
export async function installSchemaDir(dir: string | undefined, key: string, madeDir: string): Promise<void> {
  const to = await schemaDirTemplate(dir, key);
  await writeFile(path.join(madeDir, 'READY'), '');
  try {
    await rename(madeDir, to);
  } catch {
    await rm(madeDir, { recursive: true, force: true }); // another process installed it first
  }
}

/** True when `dataDir` holds no cluster yet (initdb has not run there). */
export function isFreshDataDir(dataDir: string): boolean {
  return !existsSync(path.join(dataDir, 'PG_VERSION'));
}

/** The template as a Blob for PGlite's `loadDataDir`, or undefined when none has been made yet. */
export async function loadTemplate(dir?: string, key?: string): Promise<Blob | undefined> {
  const file = await templateFile(dir, key);
  if (!existsSync(file)) return undefined;
  try {
    // PGlite decides whether to gunzip by the blob's type.
    return new Blob([await readFile(file)], { type: 'application/x-gzip' });
  } catch {
    return undefined;
  }
}

/**
 * Dumps a just-initialised (or, with `key`, just-migrated) PGlite as a template; written to a temp name then renamed,
 * so readers see all or none. A schema template replaces those of older migration sets (they only take space).
 */
export async function saveTemplate(pglite: PGlite, dir?: string, key?: string): Promise<void> {
  const file = await templateFile(dir, key);
  const dump = await pglite.dumpDataDir('gzip');
  await mkdir(path.dirname(file), { recursive: true });
  const tmp = `${file}.${process.pid}.${Date.now()}.tmp`;
  await writeFile(tmp, Buffer.from(await dump.arrayBuffer()));
  await rename(tmp, file);
  if (key) {
    const prefix = path.basename(file).replace(/-schema-.*$/, '-schema-');
    for (const name of await readdir(path.dirname(file))) {
      if (name.startsWith(prefix) && name.endsWith('.tar.gz') && name !== path.basename(file)) {
        await unlink(path.join(path.dirname(file), name)).catch(() => undefined);
      }
      if (name.startsWith(prefix) && name.endsWith('.d') && name !== path.basename(file).replace(/\.tar\.gz$/, '.d')) {
        await rm(path.join(path.dirname(file), name), { recursive: true, force: true }).catch(() => undefined);
      }
    }
  }
}
