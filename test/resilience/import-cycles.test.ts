// scripts/check-import-cycles.ts in `npm test` (issue 19): no import cycle among the files of src/, `import type`
// included, and the checker itself finds cycles of every import form.
import test from 'ava';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { checkTree, cycles, importsOf } from '../../scripts/check-import-cycles.ts';

test('every module specifier form counts, type-only ones included', (t) => {
  const code = `
    import a from './a.ts';
    import type { B } from './b.ts';
    export { c } from './c.ts';
    export type * from './d.ts';
    const e = await import('./e.ts');
    let f: import('./f.ts').F;
    import fs from 'node:fs';
  `;
  t.deepEqual(importsOf('x.ts', code), ['./a.ts', './b.ts', './c.ts', './d.ts', './e.ts', './f.ts']);
});

test('cycles are the strongly connected components', (t) => {
  const graph = new Map([
    ['a', ['b']], ['b', ['c']], ['c', ['a', 'd']], ['d', []], ['e', ['e']], ['f', ['d']],
  ]);
  t.deepEqual(cycles(graph).map((c) => c.join(',')).sort(), ['a,b,c', 'e']);
});

test('src/ has no import cycle', (t) => {
  const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../../src');
  t.deepEqual(checkTree(root), []);
});
