// The committed src/gen/ is what proto/ generates (the same check CI runs as `npm run check:gen`).
import test from 'ava';
import { execFile } from 'node:child_process';
import { promisify } from 'node:util';

const run = promisify(execFile);

test('src/gen/ is up to date with proto/', async (t) => {
  const { stdout } = await run(process.execPath, ['scripts/gen-proto.mjs', '--check'], { cwd: process.cwd() });
  t.regex(stdout, /up to date/);
});
