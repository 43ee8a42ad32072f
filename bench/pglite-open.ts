// One fresh PGlite data dir brought to this build's schema, in a fresh process (as a node starting), timed from the
// open to the migrated database: `tsx bench/pglite-open.ts <one-by-one|schema-template> <dir>` prints the wall ms
// and the CPU ms (user + system) of that span.
// one-by-one: the initdb template, then every migration applied file by file (what a node did before issue 15);
// schema-template: openMigratedPglite, which starts from the template that already holds the migrations.
import path from 'node:path';
import { migrate } from '../src/storage/migrate.ts';
import { openMigratedPglite } from '../src/storage/open.ts';
import { openPglite } from '../src/storage/pglite.ts';

const [mode, dir] = process.argv.slice(2);
if (!dir || (mode !== 'one-by-one' && mode !== 'schema-template')) throw new Error('usage: pglite-open.ts <one-by-one|schema-template> <dir>');
const started = performance.now();
const cpu0 = process.cpuUsage();
const db =
  mode === 'one-by-one'
    ? await openPglite(path.join(dir, 'pglite')).then(async (d) => (await migrate(d), d))
    : await openMigratedPglite(path.join(dir, 'pglite'));
const ms = performance.now() - started;
const cpu = process.cpuUsage(cpu0);
await db.close();
process.stdout.write(`${ms} ${(cpu.user + cpu.system) / 1000}\n`);
