// Run after `npm install`: makes the PGlite initdb template (see src/storage/pglite-template.ts) so that the first
// `npm start` and every test's fresh database skip initdb. Never fails the install: the template is a speed-up.
import { mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { openPglite } from '../src/storage/pglite.ts';
import { loadTemplate } from '../src/storage/pglite-template.ts';

try {
  if (!(await loadTemplate())) {
    const dir = await mkdtemp(path.join(os.tmpdir(), 'orch-prime-'));
    const db = await openPglite(path.join(dir, 'pglite'));
    await db.close();
    await rm(dir, { recursive: true, force: true });
  }
} catch (err) {
  process.stderr.write(`orch: could not prime the PGlite template (${(err as Error).message}); first start will be slower\n`);
}
