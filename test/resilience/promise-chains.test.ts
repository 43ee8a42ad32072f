// scripts/check-promise-chains.ts in `npm test`: no promise chain in src/ floats without a rejection handler
// (issue 20), and the checker itself tells the shapes apart.
import test from 'ava';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { checkSource, checkTree } from '../../scripts/check-promise-chains.ts';

test('the checker flags floating chains and accepts handled or explained ones', (t) => {
  const code = `
    void bus.subscribe(s, f).then((sub) => keep(sub));
    void close();
    p.then(() => 1);
    p.finally(() => 1);
    void p.then(ok, failed);
    void p.catch(() => undefined);
    void p.then(() => 1).catch(log);
    p.then(() => 1).catch(log);
    void current;
    // never-rejects: the body catches everything
    void (async () => { try { await x(); } catch {} })();
    void (async () => { await x(); })();
  `;
  const lines = checkSource('x.ts', code).map((f) => f.line);
  t.deepEqual(lines, [2, 3, 4, 5, 13]);
});

test('src/ has no unhandled promise chain', (t) => {
  const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../../src');
  const findings = checkTree(root);
  t.deepEqual(findings.map((f) => `${f.file}:${f.line}: ${f.text}`), []);
});
