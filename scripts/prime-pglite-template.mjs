// Run by `npm install` (after the build, in `prepare`): makes the PGlite initdb template (see
// src/storage/pglite-template.ts) so that the first `npm start` and every test's fresh database skip initdb. Runs the
// compiled build when current, else the sources through tsx (bin/entry.js). Never fails the install: the template is
// a speed-up.
import { mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { buildState, importEntry } from '../bin/entry.js';

try {
  const state = buildState();
  const { openPglite } = await importEntry('storage/pglite', state);
  const { loadTemplate } = await importEntry('storage/pglite-template', state);
  if (!(await loadTemplate())) {
    const dir = await mkdtemp(path.join(os.tmpdir(), 'orch-prime-'));
    const db = await openPglite(path.join(dir, 'pglite'));
    await db.close();
    await rm(dir, { recursive: true, force: true });
  }
} catch (err) {
  process.stderr.write(`orch: could not prime the PGlite template (${err.message}); first start will be slower\n`);
}
