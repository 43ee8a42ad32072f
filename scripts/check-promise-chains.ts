// Finds promise chains in src/ whose rejection nobody handles (issue 20: `void d.bus.subscribe(...).then(...)` with
// no catch killed a worker when Redis restarted). Read with the TypeScript parser, no type checking (cheap enough
// for every `npm test`), so it looks at the two shapes that float a promise on purpose:
//
//   void <call>;                  a fire-and-forget call
//   <expr>.then(f) / .finally(f); a chain used as a statement
//
// Either is accepted when the outermost call handles rejection: `.catch(handler)`, `.then(onFulfilled, onRejected)`,
// or a `.finally(f)` after one of those.
// Anything else is a finding, unless the line (or the one above) says why it cannot reject:
//
//   // never-rejects: <reason>        (e.g. an async IIFE whose body catches everything)
//
//   npx tsx scripts/check-promise-chains.ts       prints the findings, exits 1 when there is one
import { readdirSync, readFileSync, statSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import ts from 'typescript';

export interface Finding {
  file: string;
  line: number;
  text: string;
}

const ALLOW = /\/\/\s*never-rejects:\s*\S/;

/** The outermost call of `expr` (through parentheses, `!`, `as`), or undefined when it is not a call. */
function outerCall(expr: ts.Expression): ts.CallExpression | undefined {
  let e: ts.Expression = expr;
  for (;;) {
    if (ts.isParenthesizedExpression(e) || ts.isNonNullExpression(e) || ts.isAsExpression(e) || ts.isSatisfiesExpression(e)) e = e.expression;
    else break;
  }
  return ts.isCallExpression(e) ? e : undefined;
}

function methodName(call: ts.CallExpression): string | undefined {
  const callee = call.expression;
  if (ts.isPropertyAccessExpression(callee)) return callee.name.text;
  return undefined;
}

/** True when the chain's last link deals with a rejection. */
function handlesRejection(call: ts.CallExpression): boolean {
  const name = methodName(call);
  if (name === 'catch') return true;
  if (name === 'then' && call.arguments.length >= 2) return true;
  // `.finally(f)` passes a rejection on: fine only when what it follows cannot reject (a chain ending in a catch).
  if (name === 'finally' && ts.isPropertyAccessExpression(call.expression)) {
    const receiver = outerCall(call.expression.expression);
    return receiver !== undefined && handlesRejection(receiver);
  }
  return false;
}

function allowed(source: ts.SourceFile, node: ts.Node): boolean {
  const { line } = source.getLineAndCharacterOfPosition(node.getStart(source));
  const lines = source.text.split('\n');
  return ALLOW.test(lines[line] ?? '') || ALLOW.test(lines[line - 1] ?? '');
}

/** The findings of one file's text. */
export function checkSource(file: string, text: string): Finding[] {
  const source = ts.createSourceFile(file, text, ts.ScriptTarget.Latest, true, ts.ScriptKind.TS);
  const findings: Finding[] = [];
  const report = (node: ts.Node): void => {
    if (allowed(source, node)) return;
    const { line } = source.getLineAndCharacterOfPosition(node.getStart(source));
    findings.push({ file, line: line + 1, text: node.getText(source).split('\n')[0]!.slice(0, 120) });
  };
  const visit = (node: ts.Node): void => {
    if (ts.isVoidExpression(node)) {
      const call = outerCall(node.expression);
      if (call && !handlesRejection(call)) report(node);
    } else if (ts.isExpressionStatement(node)) {
      const call = outerCall(node.expression);
      const name = call && methodName(call);
      if (call && (name === 'then' || name === 'finally') && !handlesRejection(call)) report(node);
    }
    ts.forEachChild(node, visit);
  };
  visit(source);
  return findings;
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

/** Every finding under `root` (default: the repository's src/). */
export function checkTree(root: string): Finding[] {
  return tsFiles(root).flatMap((file) => checkSource(path.relative(path.dirname(root), file), readFileSync(file, 'utf8')));
}

if (process.argv[1] && path.resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../src');
  const findings = checkTree(root);
  for (const f of findings) process.stdout.write(`${f.file}:${f.line}: unhandled promise chain: ${f.text}\n`);
  process.stdout.write(findings.length === 0 ? 'no unhandled promise chains\n' : `${findings.length} unhandled promise chain(s); add .catch(...) or a "// never-rejects: <why>" comment\n`);
  process.exit(findings.length === 0 ? 0 : 1);
}
