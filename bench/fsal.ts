// FSAL throughput: sequential write and read (MB/s) and small files (files/s), through FsalService over gRPC (a real
// client, bearer auth, PostgreSQL with a StorageEvent row per call), through a kernel FUSE mount of the same volume
// (shell tools in a child process), and on the local disk with the same client code, as the ratio that matters.
// Everything runs on this machine: the gRPC server, the FUSE daemon's callbacks and the client share the bench
// process (the FUSE shell commands run in their own).
// Run: `npm run bench -- fsal [--runs N]`, or `tsx bench/fsal.ts [runs]`. `npm run bench -- fsal --dd-only --runs N`:
// only the 64 MiB `dd` write and read, N times on one mount and N times on the local disk, alternated (reportFsalDd).
import { execFile } from 'node:child_process';
import { mkdtemp, open, readFile, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { status } from '@grpc/grpc-js';
// The client's serializers are the FUSE daemon's (src/fsal/wire.ts: Write requests encoded in one buffer).
import { FSAL_DEFINITION as S } from '../src/fsal/wire.ts';
import { fuseAvailable } from '../src/fuse/binding.ts';
import { FsalRemote } from '../src/fuse/fsal-client.ts';
import { MountManager } from '../src/fuse/mounts.ts';
import { silentLogger } from '../src/logging/logger.ts';
import { fsalFixture, TENANT, type FsalFixture } from '../test/fsal/support.ts';
import { median } from './stats.ts';

export interface FsalFigures {
  grpcWriteMBps: number;
  /** FsalExtensionService.WriteStream (an orch extension), 1 MiB messages, up to 8 unanswered as the FUSE daemon's. */
  grpcStreamWriteMBps?: number;
  grpcReadMBps: number;
  grpcSmallFilesPerSec: number;
  fuseWriteMBps?: number;
  fuseReadMBps?: number;
  fuseSmallFilesPerSec?: number;
  diskWriteMBps: number;
  diskReadMBps: number;
  diskSmallFilesPerSec: number;
  shellDiskWriteMBps: number;
  shellDiskReadMBps: number;
  shellDiskSmallFilesPerSec: number;
  /** Real work, seconds: `git clone` of a local repository and `npm ci --offline` of a small project. */
  fuseGitCloneSec?: number;
  fuseNpmCiSec?: number;
  diskGitCloneSec: number;
  diskNpmCiSec: number;
}

const FILE_MB = 64;
const CHUNK = 1024 * 1024;
const SMALL_FILES = 300;
const SMALL_SIZE = 1024;

function sh(script: string): Promise<void> {
  return new Promise((resolve, reject) =>
    execFile('sh', ['-c', script], { timeout: 300_000, maxBuffer: 1 << 20 }, (err, _o, stderr) => (err ? reject(new Error(`${script}: ${stderr || err.message}`)) : resolve())),
  );
}

async function timed(fn: () => Promise<void>): Promise<number> {
  const t0 = process.hrtime.bigint();
  await fn();
  return Number(process.hrtime.bigint() - t0) / 1e9;
}

async function ok<T extends { code: status; details: string }>(p: Promise<T>): Promise<T> {
  const r = await p;
  if (r.code !== status.OK) throw new Error(`FSAL call failed: ${status[r.code]} ${r.details}`);
  return r;
}

async function grpcFigures(f: FsalFixture, ids: { execution_id: string; volume_id: string }, tag: string) {
  const data = Buffer.alloc(CHUNK, 7);
  await ok(f.rpc(S.create, { ...ids, path: `${tag}.bin`, mode: 0, exclusive: true }));
  const w = await timed(async () => {
    for (let i = 0; i < FILE_MB; i++) await ok(f.rpc(S.write, { ...ids, path: `${tag}.bin`, offset: i * CHUNK, data }));
  });
  let grpcStreamWriteMBps: number | undefined;
  if ('writeInOrder' in f.fsal) {
    // The FUSE daemon's own client and its bound on what is unanswered (8 MiB), over the orch extension.
    const token = await f.idp.sign({ sub: 'svc-bench', preferred_username: 'service-account-bench' });
    const remote = new FsalRemote({ address: f.address, token }, { ...ids, tenant_id: TENANT });
    await ok(f.rpc(S.create, { ...ids, path: `${tag}-stream.bin`, mode: 0, exclusive: true }));
    const sw = await timed(async () => {
      const stream = remote.writeStream();
      const inFlight: Promise<unknown>[] = [];
      for (let i = 0; i < FILE_MB; i++) {
        if (inFlight.length >= 8) await inFlight.shift();
        inFlight.push(stream.write(remote.writeRequest(`${tag}-stream.bin`, i * CHUNK, data)));
      }
      await Promise.all(inFlight);
      stream.end();
    });
    remote.close();
    grpcStreamWriteMBps = FILE_MB / sw;
  }
  const r = await timed(async () => {
    for (let i = 0; i < FILE_MB; i++) await ok(f.rpc(S.read, { ...ids, path: `${tag}.bin`, offset: i * CHUNK, length: CHUNK }));
  });
  await ok(f.rpc(S.mkDir, { ...ids, path: `${tag}-small`, mode: 0 }));
  const small = Buffer.alloc(SMALL_SIZE, 1);
  const s = await timed(async () => {
    for (let i = 0; i < SMALL_FILES; i++) {
      await ok(f.rpc(S.create, { ...ids, path: `${tag}-small/f${i}`, mode: 0, exclusive: true }));
      await ok(f.rpc(S.write, { ...ids, path: `${tag}-small/f${i}`, offset: 0, data: small }));
    }
  });
  return { grpcWriteMBps: FILE_MB / w, ...(grpcStreamWriteMBps === undefined ? {} : { grpcStreamWriteMBps }), grpcReadMBps: FILE_MB / r, grpcSmallFilesPerSec: SMALL_FILES / s };
}

async function diskFigures(dir: string) {
  const data = Buffer.alloc(CHUNK, 7);
  const file = path.join(dir, 'disk.bin');
  const w = await timed(async () => {
    const fh = await open(file, 'w');
    for (let i = 0; i < FILE_MB; i++) await fh.write(data, 0, CHUNK, i * CHUNK);
    await fh.close();
  });
  const r = await timed(async () => {
    const fh = await open(file, 'r');
    const buf = Buffer.alloc(CHUNK);
    for (let i = 0; i < FILE_MB; i++) await fh.read(buf, 0, CHUNK, i * CHUNK);
    await fh.close();
  });
  const small = Buffer.alloc(SMALL_SIZE, 1);
  const s = await timed(async () => {
    for (let i = 0; i < SMALL_FILES; i++) await writeFile(path.join(dir, `small-${i}`), small, { flag: 'wx' });
  });
  await readFile(file).then(() => undefined);
  return { diskWriteMBps: FILE_MB / w, diskReadMBps: FILE_MB / r, diskSmallFilesPerSec: SMALL_FILES / s };
}

/** `dd` of a FILE_MB MiB file in 1 MiB blocks, written then read back: MB/s. */
async function ddFigures(dir: string, tag: string): Promise<{ writeMBps: number; readMBps: number }> {
  const w = await timed(() => sh(`dd if=/dev/zero of=${dir}/${tag}.bin bs=1M count=${FILE_MB} 2>/dev/null`));
  // The page cache is not dropped (not ours to do on a shared machine). Through the mount, a file the mount itself
  // wrote is read back from it under libfuse 3 (keep_cache at the open); libfuse 2.9's auto_cache re-read it.
  const r = await timed(() => sh(`dd if=${dir}/${tag}.bin of=/dev/null bs=1M 2>/dev/null`));
  return { writeMBps: FILE_MB / w, readMBps: FILE_MB / r };
}

/** The same shell commands on a directory: `dd` 1 MiB blocks for the big file, a shell loop for small files. */
async function shellFigures(dir: string, tag: string) {
  const { writeMBps, readMBps } = await ddFigures(dir, tag);
  const s = await timed(() => sh(`mkdir ${dir}/${tag}-small && cd ${dir}/${tag}-small && i=0; while [ $i -lt ${SMALL_FILES} ]; do head -c ${SMALL_SIZE} /dev/zero > f$i; i=$((i+1)); done`));
  return { writeMBps, readMBps, smallFilesPerSec: SMALL_FILES / s };
}

/** Leaf packages (no dependencies, no bins) of this checkout, packed as tarballs for an offline `npm ci`. */
const NPM_PACKAGES = ['ms', 'escape-string-regexp', 'picocolors', 'json-schema-traverse', 'wrappy', 'inherits', 'safe-buffer'];

/**
 * The real-work fixtures, made once on the local disk: a git repository holding this checkout's src/ tree (one
 * commit), and a small npm project whose dependencies are packed tarballs (`file:` tarball dependencies install
 * offline, like registry ones: extracted into node_modules) with its package-lock.json.
 */
async function realWorkFixtures(dir: string): Promise<{ repo: string; project: string }> {
  const repo = path.join(dir, 'repo');
  const project = path.join(dir, 'project');
  const root = path.resolve(path.dirname(new URL(import.meta.url).pathname), '..');
  await sh(`mkdir -p ${repo} && cp -r ${root}/src ${repo}/ && cd ${repo} && git init -q && git add -A && git -c user.name=bench -c user.email=bench@orch.invalid commit -qm fixture`);
  await sh(`mkdir -p ${project}/packs && cd ${project}/packs && for p in ${NPM_PACKAGES.join(' ')}; do npm pack --silent --ignore-scripts ${root}/node_modules/$p >/dev/null; done`);
  const deps: Record<string, string> = {};
  for (const name of NPM_PACKAGES) {
    const version = (JSON.parse(await readFile(path.join(root, 'node_modules', name, 'package.json'), 'utf8')) as { version: string }).version;
    deps[name] = `file:packs/${name}-${version}.tgz`;
  }
  await writeFile(path.join(project, 'package.json'), JSON.stringify({ name: 'fsal-bench-project', version: '1.0.0', private: true, dependencies: deps }, null, 2));
  await sh(`cd ${project} && npm install --package-lock-only --offline --no-audit --no-fund --silent`);
  return { repo, project };
}

/** `git clone` of the fixture repository and `npm ci --offline` of the fixture project, inside `dir`. */
async function realWork(dir: string, fx: { repo: string; project: string }, tag: string): Promise<{ gitCloneSec: number; npmCiSec: number }> {
  const gitCloneSec = await timed(() => sh(`git clone -q file://${fx.repo} ${dir}/${tag}-clone`));
  await sh(`mkdir ${dir}/${tag}-project && cp -r ${fx.project}/package.json ${fx.project}/package-lock.json ${fx.project}/packs ${dir}/${tag}-project/`);
  const npmCiSec = await timed(() => sh(`cd ${dir}/${tag}-project && npm ci --offline --no-audit --no-fund --silent --cache ${dir}/${tag}-npm-cache`));
  return { gitCloneSec, npmCiSec };
}

export async function benchFsal(run = 0): Promise<FsalFigures> {
  const f = await fsalFixture();
  const local = await mkdtemp(path.join(os.tmpdir(), 'orch-bench-disk-'));
  const prefix = await mkdtemp(path.join(os.tmpdir(), 'orch-bench-fuse-'));
  try {
    const exec = await f.execution();
    const vol = await f.volume({ limit: 4 * FILE_MB * CHUNK + 64 * CHUNK });
    await f.grant(exec, vol);
    const ids = { execution_id: exec, volume_id: vol };
    const grpc = await grpcFigures(f, ids, `grpc-${run}`);
    const disk = await diskFigures(local);
    const shellDisk = await shellFigures(local, 'shell');
    const fx = await realWorkFixtures(await mkdtemp(path.join(local, 'fixtures-')));
    const diskWork = await realWork(local, fx, 'disk');
    let fuse: Partial<FsalFigures> = {};
    if (fuseAvailable()) {
      const token = await f.idp.sign({ sub: 'svc-bench', preferred_username: 'service-account-bench' });
      const mounts = new MountManager({ mountPrefix: prefix, fsal: { address: f.address, token }, logger: silentLogger() });
      try {
        const mnt = await mounts.mount({ ...ids, tenant_id: TENANT });
        const fig = await shellFigures(mnt, `fuse-${run}`);
        fuse = { fuseWriteMBps: fig.writeMBps, fuseReadMBps: fig.readMBps, fuseSmallFilesPerSec: fig.smallFilesPerSec };
        const work = await realWork(mnt, fx, `fuse-${run}`).catch((err: unknown) => {
          process.stderr.write(`real work through the mount failed: ${(err as Error).message}\n`);
          return undefined;
        });
        if (work) fuse = { ...fuse, fuseGitCloneSec: work.gitCloneSec, fuseNpmCiSec: work.npmCiSec };
      } finally {
        await mounts.closeAll();
      }
    }
    return {
      ...grpc,
      ...fuse,
      ...disk,
      shellDiskWriteMBps: shellDisk.writeMBps,
      shellDiskReadMBps: shellDisk.readMBps,
      shellDiskSmallFilesPerSec: shellDisk.smallFilesPerSec,
      diskGitCloneSec: diskWork.gitCloneSec,
      diskNpmCiSec: diskWork.npmCiSec,
    };
  } finally {
    await f.close();
    await rm(local, { recursive: true, force: true });
    await rm(prefix, { recursive: true, force: true });
  }
}

/** Runs `runs` times and prints one line per figure: the median and every run. */
export async function reportFsal(runs: number, print: (line: string) => void): Promise<void> {
  const all: FsalFigures[] = [];
  for (let i = 0; i < runs; i++) all.push(await benchFsal(i));
  const line = (name: string, key: keyof FsalFigures, unit: string): void => {
    const xs = all.map((x) => x[key]).filter((x): x is number => typeof x === 'number');
    if (xs.length === 0) return print(`${name.padEnd(60)} (not measured: no FUSE binding, or no FsalExtensionService in this build)`);
    print(`${name.padEnd(60)} median ${median(xs).toFixed(1).padStart(8)} ${unit}   runs: ${xs.map((x) => x.toFixed(1)).join(', ')}`);
  };
  line(`FSAL gRPC sequential write, 1 MiB calls (${FILE_MB} MiB)`, 'grpcWriteMBps', 'MB/s');
  line(`FSAL gRPC streamed write, 1 MiB messages (${FILE_MB} MiB)`, 'grpcStreamWriteMBps', 'MB/s');
  line(`FSAL gRPC sequential read, 1 MiB calls (${FILE_MB} MiB)`, 'grpcReadMBps', 'MB/s');
  line(`FSAL gRPC small files (Create + Write ${SMALL_SIZE} B)`, 'grpcSmallFilesPerSec', 'files/s');
  line('local disk, same client code: sequential write', 'diskWriteMBps', 'MB/s');
  line('local disk, same client code: sequential read', 'diskReadMBps', 'MB/s');
  line('local disk, same client code: small files', 'diskSmallFilesPerSec', 'files/s');
  line('FUSE mount: dd write bs=1M', 'fuseWriteMBps', 'MB/s');
  line('FUSE mount: dd read bs=1M', 'fuseReadMBps', 'MB/s');
  line(`FUSE mount: shell loop, small files (${SMALL_SIZE} B)`, 'fuseSmallFilesPerSec', 'files/s');
  line('local disk: dd write bs=1M', 'shellDiskWriteMBps', 'MB/s');
  line('local disk: dd read bs=1M', 'shellDiskReadMBps', 'MB/s');
  line(`local disk: shell loop, small files (${SMALL_SIZE} B)`, 'shellDiskSmallFilesPerSec', 'files/s');
  line('FUSE mount: git clone of a local repository (src/ tree, 1 commit)', 'fuseGitCloneSec', 's');
  line(`FUSE mount: npm ci --offline of a small project (${NPM_PACKAGES.length} packed deps)`, 'fuseNpmCiSec', 's');
  line('local disk: git clone of a local repository (src/ tree, 1 commit)', 'diskGitCloneSec', 's');
  line(`local disk: npm ci --offline of a small project (${NPM_PACKAGES.length} packed deps)`, 'diskNpmCiSec', 's');
}

/**
 * The `dd` lines alone (bs=1M, FILE_MB MiB, /dev/zero), each run writing and reading a file on one mount and then on
 * the local disk, alternated, the mount's file removed after each run: the full bench's single runs swing 3-10x
 * between neighbours on a shared machine, this isolates the write-behind.
 */
export async function reportFsalDd(runs: number, print: (line: string) => void): Promise<void> {
  if (!fuseAvailable()) return print('FUSE binding not available');
  const f = await fsalFixture();
  const local = await mkdtemp(path.join(os.tmpdir(), 'orch-bench-disk-'));
  const prefix = await mkdtemp(path.join(os.tmpdir(), 'orch-bench-fuse-'));
  const figs = { fuseW: [] as number[], fuseR: [] as number[], diskW: [] as number[], diskR: [] as number[] };
  try {
    const exec = await f.execution();
    const vol = await f.volume({ limit: 2 * FILE_MB * CHUNK });
    await f.grant(exec, vol);
    const token = await f.idp.sign({ sub: 'svc-bench', preferred_username: 'service-account-bench' });
    const mounts = new MountManager({ mountPrefix: prefix, fsal: { address: f.address, token }, logger: silentLogger() });
    try {
      const mnt = await mounts.mount({ execution_id: exec, volume_id: vol, tenant_id: TENANT });
      for (let i = 0; i < runs; i++) {
        const fuse = await ddFigures(mnt, `dd-${i}`);
        await sh(`rm -f ${mnt}/dd-${i}.bin`);
        const disk = await ddFigures(local, `dd-${i}`);
        await sh(`rm -f ${local}/dd-${i}.bin`);
        figs.fuseW.push(fuse.writeMBps);
        figs.fuseR.push(fuse.readMBps);
        figs.diskW.push(disk.writeMBps);
        figs.diskR.push(disk.readMBps);
      }
    } finally {
      await mounts.closeAll();
    }
  } finally {
    await f.close();
    await rm(local, { recursive: true, force: true });
    await rm(prefix, { recursive: true, force: true });
  }
  const line = (name: string, xs: number[]): void => print(`${name.padEnd(60)} median ${median(xs).toFixed(1).padStart(8)} MB/s   runs: ${xs.map((x) => x.toFixed(1)).join(', ')}`);
  line('FUSE mount: dd write bs=1M', figs.fuseW);
  line('FUSE mount: dd read bs=1M', figs.fuseR);
  line('local disk: dd write bs=1M', figs.diskW);
  line('local disk: dd read bs=1M', figs.diskR);
  print(`FUSE dd write / local dd write, median of the per-run ratios: ${(100 * median(figs.fuseW.map((w, i) => w / figs.diskW[i]!))).toFixed(1)} %`);
}

if (import.meta.url === `file://${process.argv[1]}`) {
  await reportFsal(Number(process.argv[2] ?? 3), (l) => process.stdout.write(`${l}\n`));
  process.exit(0);
}
