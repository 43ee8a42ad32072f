// `orch volume …` against a real `orch up` node on real PostgreSQL: the node wires VolumeService into HTTP, and the
// CLI creates, lists, uploads, downloads, reports quota (and ENOSPC as one line, exit 1) and deletes.
import { randomBytes } from 'node:crypto';
import { existsSync } from 'node:fs';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import test from 'ava';
import { parseSize } from '../../src/cli/volume-commands.ts';
import { createTestDatabase } from '../support/pg.ts';
import { runOrch, startOrchNode } from '../support/node-process.ts';

test('parseSize takes bytes and binary units', (t) => {
  t.is(parseSize('100'), 100);
  t.is(parseSize('4K'), 4096);
  t.is(parseSize('10M'), 10 * 1024 * 1024);
  t.is(parseSize('1.5GiB'), 1.5 * 1024 ** 3);
  t.throws(() => parseSize('ten'), { message: /invalid size/ });
  t.throws(() => parseSize('0'), { message: /positive/ });
});

test('orch volume create|ls|rename|quota|files put|ls|get|mkdir|mv|rm|rm on a running node', async (t) => {
  const dir = await mkdtemp(path.join(os.tmpdir(), 'orch-volume-cli-'));
  const db = await createTestDatabase({ migrated: true });
  t.teardown(async () => {
    await db.drop();
    await rm(dir, { recursive: true, force: true });
  });
  const env = { DATABASE_URL: db.url, REDIS_URL: undefined, DOCKER_HOST: undefined, ORCH_CONFIG: undefined, ORCH_DATA_DIR: path.join(dir, 'data') };
  const node = await startOrchNode(env);
  t.teardown(() => node.child.kill('SIGKILL'));
  const cli = { ORCH_URL: node.banner.http, ORCH_TOKEN: node.banner.dev_token };
  const orch = async (...args: string[]) => {
    const r = await runOrch(args, cli);
    return r;
  };

  const created = await orch('--json', 'volume', 'create', 'results', '--size', '64K');
  t.is(created.code, 0, created.stderr);
  const v = JSON.parse(created.stdout) as { id: string; size_limit_bytes: number; storage_class: string };
  t.is(v.size_limit_bytes, 65536);
  t.is(v.storage_class, 'persistent');
  t.true(existsSync(path.join(dir, 'data', 'volumes', v.id)));

  const ls = await orch('volume', 'ls');
  t.is(ls.code, 0, ls.stderr);
  t.regex(ls.stdout, /^ID\s+LABEL\s+STORAGE_CLASS/m);
  t.regex(ls.stdout, new RegExp(`${v.id}\\s+results\\s+persistent`));

  const local = path.join(dir, 'in.bin');
  const data = randomBytes(40_000);
  await writeFile(local, data);
  const put = await orch('volume', 'files', 'put', v.id, '/out/in.bin', local);
  t.is(put.code, 0, put.stderr);
  t.regex(put.stdout, /wrote 40000 bytes to \/out\/in\.bin/);

  const files = await orch('volume', 'files', 'ls', v.id, '/out');
  t.is(files.code, 0, files.stderr);
  t.regex(files.stdout, /in\.bin\s+file\s+40000/);

  const back = path.join(dir, 'back.bin');
  const get = await orch('volume', 'files', 'get', v.id, '/out/in.bin', '-o', back);
  t.is(get.code, 0, get.stderr);
  t.true((await readFile(back)).equals(data));
  const note = path.join(dir, 'note.txt');
  await writeFile(note, 'hello volume\n');
  t.is((await orch('volume', 'files', 'put', v.id, 'note.txt', note)).code, 0);
  const toStdout = await orch('volume', 'files', 'get', v.id, 'note.txt');
  t.is(toStdout.code, 0, toStdout.stderr);
  t.is(toStdout.stdout, 'hello volume\n');

  const quota = await orch('--json', 'volume', 'quota', v.id);
  t.like(JSON.parse(quota.stdout), { used_bytes: 40_013, size_limit_bytes: 65_536, file_count: 2 });
  const quotaText = await orch('volume', 'quota', v.id);
  t.regex(quotaText.stdout, /used 39\.1 KiB of 64\.0 KiB \(40013 \/ 65536 bytes\)/);

  // Too big for what is left: one line on stderr naming ENOSPC, exit 1.
  const full = await orch('volume', 'files', 'put', v.id, '/more.bin', local);
  t.is(full.code, 1);
  t.regex(full.stderr, /^orch: .*507.*ENOSPC.*\n$/);

  t.is((await orch('volume', 'rename', v.id, 'renamed')).code, 0);
  t.regex((await orch('volume', 'ls')).stdout, new RegExp(`${v.id}\\s+renamed`));
  t.regex((await orch('volume', 'files', 'mkdir', v.id, 'a/b')).stdout, /made \/a\/b/);
  t.regex((await orch('volume', 'files', 'mv', v.id, 'note.txt', 'a/b/note.txt')).stdout, /moved note\.txt to \/a\/b\/note\.txt/);
  const notEmpty = await orch('volume', 'files', 'rm', v.id, 'a');
  t.is(notEmpty.code, 1);
  t.regex(notEmpty.stderr, /409.*recursive/);
  t.regex((await orch('volume', 'files', 'rm', v.id, 'a', '-r')).stdout, /deleted \/a \(13 bytes freed\)/);

  const missing = await orch('volume', 'files', 'get', v.id, '/nope');
  t.is(missing.code, 1);
  t.regex(missing.stderr, /404/);

  const removed = await orch('volume', 'rm', v.id);
  t.is(removed.code, 0, removed.stderr);
  t.false(existsSync(path.join(dir, 'data', 'volumes', v.id)));
  const gone = await orch('volume', 'quota', v.id);
  t.is(gone.code, 1);
  t.regex(gone.stderr, /404/);
});
