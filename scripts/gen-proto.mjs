#!/usr/bin/env node
// Generates TypeScript for every proto/**/*.proto into src/gen/ with ts-proto (grpc-js services).
//   node scripts/gen-proto.mjs          regenerate src/gen/ (stale files are removed)
//   node scripts/gen-proto.mjs --check  generate into a temp dir and fail if src/gen/ differs (CI)
// Offline and deterministic: protoc comes from the `protoc` npm package, the plugin from ts-proto, and the
// version banner is turned off so that the output depends only on the .proto files and the options below.
import { spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, relative, sep } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = dirname(dirname(fileURLToPath(import.meta.url)));
const protoDir = join(root, 'proto');
const genDir = join(root, 'src', 'gen');
const protocCli = join(root, 'node_modules', 'protoc', 'protoc.cjs');
const protocInclude = join(root, 'node_modules', 'protoc', 'include');
const plugin = join(root, 'node_modules', '.bin', process.platform === 'win32' ? 'protoc-gen-ts_proto.cmd' : 'protoc-gen-ts_proto');

// Why each option: see docs/PROTO.md ("Generated code").
const TS_PROTO_OPTIONS = [
  'outputServices=grpc-js',
  'env=node',
  'esModuleInterop=true',
  'importSuffix=.js',
  'useOptionals=messages',
  'oneof=unions-value',
  'snakeToCamel=false',
  'annotateFilesWithVersion=false',
];

/** Every file under `dir`, as sorted `/`-separated paths relative to `dir`. */
function listFiles(dir, base = dir) {
  if (!existsSync(dir)) return [];
  const out = [];
  for (const entry of readdirSync(dir, { withFileTypes: true })) {
    const full = join(dir, entry.name);
    if (entry.isDirectory()) out.push(...listFiles(full, base));
    else out.push(relative(base, full).split(sep).join('/'));
  }
  return out.sort();
}

function fail(message) {
  process.stderr.write(`gen-proto: ${message}\n`);
  process.exit(1);
}

function generate(outDir) {
  const protos = listFiles(protoDir).filter((f) => f.endsWith('.proto'));
  if (protos.length === 0) fail(`no .proto files under ${relative(root, protoDir)}`);
  for (const required of [protocCli, plugin]) {
    if (!existsSync(required)) fail(`${relative(root, required)} is missing; run npm ci`);
  }
  mkdirSync(outDir, { recursive: true });
  const args = [
    protocCli,
    `--plugin=protoc-gen-ts_proto=${plugin}`,
    `--ts_proto_out=${outDir}`,
    `--ts_proto_opt=${TS_PROTO_OPTIONS.join(',')}`,
    `--proto_path=${protoDir}`,
    `--proto_path=${protocInclude}`,
    ...protos,
  ];
  // protoc.cjs picks the binary for this platform and architecture out of the protoc package.
  const result = spawnSync(process.execPath, args, { cwd: root, stdio: 'inherit' });
  if (result.error) fail(`could not run protoc: ${result.error.message}`);
  if (result.status !== 0) fail(`protoc exited with status ${result.status}`);
}

/** The differences between two generated trees, one line each. */
function diffTrees(expectedDir, actualDir) {
  const expected = listFiles(expectedDir);
  const actual = new Set(listFiles(actualDir));
  const problems = [];
  for (const file of expected) {
    if (!actual.has(file)) problems.push(`missing: src/gen/${file}`);
    else if (!readFileSync(join(expectedDir, file)).equals(readFileSync(join(actualDir, file)))) {
      problems.push(`differs: src/gen/${file}`);
    }
    actual.delete(file);
  }
  for (const file of actual) problems.push(`not generated from proto/: src/gen/${file}`);
  return problems;
}

if (process.argv.includes('--check')) {
  const tmp = mkdtempSync(join(tmpdir(), 'orch-gen-proto-'));
  try {
    generate(tmp);
    const problems = diffTrees(tmp, genDir);
    if (problems.length > 0) {
      fail(`src/gen/ is out of date with proto/ (run npm run gen:proto and commit):\n  ${problems.join('\n  ')}`);
    }
    process.stdout.write('gen-proto: src/gen/ is up to date\n');
  } finally {
    rmSync(tmp, { recursive: true, force: true });
  }
} else {
  rmSync(genDir, { recursive: true, force: true });
  generate(genDir);
  process.stdout.write(`gen-proto: wrote ${listFiles(genDir).length} files to src/gen/\n`);
}
