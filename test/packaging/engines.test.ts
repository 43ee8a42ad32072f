// `npm ci` must install on the Node versions package.json claims without EBADENGINE warnings (issue 15 item 8:
// @fastify/static 10 and light-my-request 6.8 pulled in content-disposition 3 and cookie 2, which need Node >= 22).
// The lockfile is what `npm ci` installs, so every entry in it is checked against the running Node and against the
// oldest Node our own `engines` range admits.
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import test from 'ava';
import semver from 'semver';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');
const manifest = JSON.parse(readFileSync(path.join(root, 'package.json'), 'utf8')) as { engines: { node: string } };
const lock = JSON.parse(readFileSync(path.join(root, 'package-lock.json'), 'utf8')) as {
  packages: Record<string, { version?: string; engines?: { node?: string } | string[] }>;
};

function refusing(nodeVersion: string): string[] {
  const out: string[] = [];
  for (const [where, entry] of Object.entries(lock.packages)) {
    // Old packages wrote engines as an array of strings; npm ignores that form.
    const range = Array.isArray(entry.engines) ? undefined : entry.engines?.node;
    if (range !== undefined && !semver.satisfies(nodeVersion, range, { includePrerelease: true })) {
      out.push(`${where || '(root)'}@${entry.version ?? '?'} needs node ${range}`);
    }
  }
  return out;
}

test('every package in the lockfile accepts the running Node', (t) => {
  t.deepEqual(refusing(process.version), []);
});

test("every package in the lockfile accepts the oldest Node package.json's engines admits", (t) => {
  const oldest = semver.minVersion(manifest.engines.node);
  t.truthy(oldest, `engines.node ${manifest.engines.node} has no minimum`);
  t.deepEqual(refusing(oldest!.version), []);
});

test('the running Node is one package.json says it supports', (t) => {
  t.true(semver.satisfies(process.version, manifest.engines.node), `${process.version} vs ${manifest.engines.node}`);
});
