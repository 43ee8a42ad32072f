// Finds import cycles among the files of src/ (issue 19: agents/execution ↔ tools/catalog ↔ tools/builtin/orch and
// tools/builtin/fs ↔ volumes/service ↔ volumes/paths). Every module specifier counts — `import`, `import type`,
// `export … from`, dynamic `import('…')` and `import('…')` types — because a type-only cycle still ties two
// capabilities together and becomes a run-time one as soon as someone needs a value. Read with the TypeScript
// parser, no type checking, so it is cheap enough for every `npm test`.
//
//   npx tsx scripts/check-import-cycles.ts     prints each cycle (strongly connected component), exits 1 when there is one
import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import ts from 'typescript';

/** The relative module specifiers of one file's text. */
export function importsOf(file: string, text: string): string[] {
  const source = ts.createSourceFile(file, text, ts.ScriptTarget.Latest, true, ts.ScriptKind.TS);
  const out: string[] = [];
  const visit = (node: ts.Node): void => {
    if ((ts.isImportDeclaration(node) || ts.isExportDeclaration(node)) && node.moduleSpecifier && ts.isStringLiteral(node.moduleSpecifier)) {
      out.push(node.moduleSpecifier.text);
    } else if (ts.isCallExpression(node) && node.expression.kind === ts.SyntaxKind.ImportKeyword) {
      const arg = node.arguments[0];
      if (arg && ts.isStringLiteralLike(arg)) out.push(arg.text);
    } else if (ts.isImportTypeNode(node) && ts.isLiteralTypeNode(node.argument) && ts.isStringLiteral(node.argument.literal)) {
      out.push(node.argument.literal.text);
    }
    ts.forEachChild(node, visit);
  };
  visit(source);
  return out.filter((s) => s.startsWith('.'));
}

/** The file a relative specifier names (`./x.js` → `./x.ts`, `./dir` → `./dir/index.ts`), or undefined. */
function resolve(from: string, spec: string): string | undefined {
  const base = path.resolve(path.dirname(from), spec);
  const candidates = [base, base.replace(/\.js$/, '.ts'), `${base}.ts`, path.join(base, 'index.ts')];
  return candidates.find((c) => c.endsWith('.ts') && existsSync(c) && statSync(c).isFile());
}

function tsFiles(dir: string): string[] {
  const out: string[] = [];
  for (const entry of readdirSync(dir)) {
    const full = path.join(dir, entry);
    if (statSync(full).isDirectory()) out.push(...tsFiles(full));
    else if (entry.endsWith('.ts') && !entry.endsWith('.d.ts')) out.push(full);
  }
  return out;
}

/** Strongly connected components with more than one file (or a file importing itself), by Tarjan's algorithm. */
export function cycles(graph: Map<string, string[]>): string[][] {
  let index = 0;
  const idx = new Map<string, number>();
  const low = new Map<string, number>();
  const stack: string[] = [];
  const onStack = new Set<string>();
  const found: string[][] = [];
  // Iterative, so a long import chain cannot overflow the call stack.
  for (const root of graph.keys()) {
    if (idx.has(root)) continue;
    const work: Array<{ node: string; next: number }> = [{ node: root, next: 0 }];
    idx.set(root, index); low.set(root, index); index++; stack.push(root); onStack.add(root);
    while (work.length > 0) {
      const frame = work[work.length - 1]!;
      const edges = graph.get(frame.node) ?? [];
      if (frame.next < edges.length) {
        const to = edges[frame.next++]!;
        if (!idx.has(to)) {
          idx.set(to, index); low.set(to, index); index++; stack.push(to); onStack.add(to);
          work.push({ node: to, next: 0 });
        } else if (onStack.has(to)) {
          low.set(frame.node, Math.min(low.get(frame.node)!, idx.get(to)!));
        }
        continue;
      }
      work.pop();
      const parent = work[work.length - 1];
      if (parent) low.set(parent.node, Math.min(low.get(parent.node)!, low.get(frame.node)!));
      if (low.get(frame.node) === idx.get(frame.node)) {
        const scc: string[] = [];
        for (;;) {
          const n = stack.pop()!;
          onStack.delete(n);
          scc.push(n);
          if (n === frame.node) break;
        }
        if (scc.length > 1 || (graph.get(frame.node) ?? []).includes(frame.node)) found.push(scc.sort());
      }
    }
  }
  return found;
}

/** The import graph of every .ts file under `root`, keyed by path relative to root's parent. */
export function importGraph(root: string): Map<string, string[]> {
  const rel = (f: string): string => path.relative(path.dirname(root), f);
  const graph = new Map<string, string[]>();
  for (const file of tsFiles(root)) {
    const targets = importsOf(file, readFileSync(file, 'utf8'))
      .map((s) => resolve(file, s))
      .filter((t): t is string => t !== undefined && t.startsWith(root + path.sep))
      .map(rel);
    graph.set(rel(file), [...new Set(targets)]);
  }
  return graph;
}

export function checkTree(root: string): string[][] {
  return cycles(importGraph(root));
}

if (process.argv[1] && path.resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../src');
  const found = checkTree(root);
  for (const scc of found) process.stdout.write(`import cycle among ${scc.length} files:\n  ${scc.join('\n  ')}\n`);
  process.stdout.write(found.length === 0 ? 'no import cycles\n' : `${found.length} import cycle(s)\n`);
  process.exit(found.length === 0 ? 0 : 1);
}
