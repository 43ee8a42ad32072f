// Run by `npm install` (after the build, in `prepare`): makes the PGlite templates (see
// src/storage/pglite-template.ts), initdb's output and the schema of this build (also as a directory to copy), so
// that the first `npm start` and every test's fresh database skip both initdb and the migrations. Runs the compiled
// build when current, else the sources through tsx (bin/entry.js). Never fails the install: they are a speed-up.
import { mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { buildState, importEntry } from '../bin/entry.js';

try {
  const state = buildState();
  const { openMigratedPglite } = await importEntry('storage/open', state);
  const { listMigrations } = await importEntry('storage/migration-files', state);
  const { loadTemplate, schemaKey } = await importEntry('storage/pglite-template', state);
  const { materializeSchemaDir } = await importEntry('storage/pglite', state);
  const key = await schemaKey(await listMigrations());
  if (!(await loadTemplate()) || !(await loadTemplate(undefined, key))) {
    const dir = await mkdtemp(path.join(os.tmpdir(), 'orch-prime-'));
    const db = await openMigratedPglite(path.join(dir, 'pglite'));
    await db.close();
    await rm(dir, { recursive: true, force: true });
  }
  // And as a directory, which a fresh data dir copies natively (the cheapest start).
  await materializeSchemaDir(key);
} catch (err) {
  process.stderr.write(`orch: could not prime the PGlite templates (${err.message}); first start will be slower\n`);
}
