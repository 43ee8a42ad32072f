// Rewrites a parsed Handlebars template so that every path goes through our lookup (see ./lookup.ts):
//   {{a.b.c}}       -> {{__orch_v "a.b.c" "top" "a" a "b" "c"}}   value as text, or the missing-key placeholder
//   {{upper a.b}}   -> {{__orch_s (upper (__orch_m "a.b" "top" "a" a "b"))}}   a MissingValue for a value helper
//   {{#each a.b}}   -> {{#each (__orch_g "a.b" "top" "a" a "b")}}   the raw value or undefined (falsy, empty)
// Arguments: the path as written, its flavour, the name of its first segment, that segment's value, the rest.
// Handlebars itself still resolves the first segment, so `this.x`, `../x`, `@root.x`, `@index` and block params
// keep their meaning. Only nodes of the parsed template and string literals we build are compiled, never text
// from elsewhere.
import { VALUE_HELPERS } from './helpers.ts';

// Minimal structural views of the Handlebars AST (the library's own typings are loose for editing in place).
interface Loc { start: { line: number; column: number }; end: { line: number; column: number } }
interface PathNode { type: 'PathExpression'; data: boolean; depth: number; parts: string[]; original: string; loc?: Loc }
interface ExprNode { type: string; loc?: Loc; [k: string]: unknown }
interface CallNode extends ExprNode { path: ExprNode; params: ExprNode[]; hash?: { pairs: { key: string; value: ExprNode }[] } }
interface ProgramNode { type: 'Program'; body: ExprNode[] }

export const LOOKUP_TEXT = '__orch_v';
export const LOOKUP_RAW = '__orch_g';
export const LOOKUP_MARKED = '__orch_m';
export const TO_TEXT = '__orch_s';

function isPath(node: ExprNode | undefined): node is ExprNode & PathNode {
  return node?.type === 'PathExpression';
}

function path(name: string, loc?: Loc): PathNode {
  return { type: 'PathExpression', data: false, depth: 0, parts: [name], original: name, ...(loc ? { loc } : {}) };
}

function str(value: string, loc?: Loc): ExprNode {
  return { type: 'StringLiteral', value, original: value, ...(loc ? { loc } : {}) };
}

/** `flavour`: "top" (a plain name), "this" (this.x / ./x), "root" (@root.x) or "rel" (../x, @data). */
function lookupArgs(p: PathNode): ExprNode[] {
  const [head, ...rest] = p.parts;
  const loc = p.loc;
  if (head === undefined) return [str(p.original, loc), str('rel', loc), str('', loc), p as unknown as ExprNode];
  const scoped = /^(\.\/|this\b)/.test(p.original);
  let headOriginal = head;
  if (p.data) headOriginal = `@${head}`;
  else if (p.depth > 0) headOriginal = `${'../'.repeat(p.depth)}${head}`;
  else if (scoped) headOriginal = `this.${head}`;
  const headNode: PathNode = { type: 'PathExpression', data: p.data, depth: p.depth, parts: [head], original: headOriginal, ...(loc ? { loc } : {}) };
  const flavour = p.data ? (head === 'root' ? 'root' : 'rel') : p.depth > 0 ? 'rel' : scoped ? 'this' : 'top';
  const shown = p.original.replace(/\.\[(\d+)\]/g, '.$1');
  return [str(shown, loc), str(flavour, loc), str(head, loc), headNode as unknown as ExprNode, ...rest.map((r) => str(r, loc))];
}

function sub(helper: string, params: ExprNode[], loc?: Loc): ExprNode {
  return { type: 'SubExpression', path: path(helper, loc) as unknown as ExprNode, params, hash: undefined, ...(loc ? { loc } : {}) };
}

function rewriteParams(call: CallNode): void {
  const name = isPath(call.path) && call.path.parts.length === 1 && !call.path.data ? call.path.parts[0] : undefined;
  const helper = name !== undefined && VALUE_HELPERS.has(name) ? LOOKUP_MARKED : LOOKUP_RAW;
  const rewrite = (node: ExprNode): ExprNode => {
    if (isPath(node)) return sub(helper, lookupArgs(node), node.loc);
    if (node.type === 'SubExpression') rewriteParams(node as CallNode);
    return node;
  };
  call.params = call.params.map(rewrite);
  if (call.hash) for (const pair of call.hash.pairs) pair.value = rewrite(pair.value);
}

function rewriteProgram(program: ProgramNode | undefined, helpers: ReadonlySet<string>): void {
  if (!program) return;
  for (const node of program.body) {
    if (node.type === 'MustacheStatement') {
      const m = node as CallNode;
      const hasArgs = m.params.length > 0 || (m.hash?.pairs.length ?? 0) > 0;
      if (!hasArgs) {
        if (!isPath(m.path)) continue; // {{"literal"}}, {{true}}
        const p = m.path;
        const bareHelper = p.parts.length === 1 && p.depth === 0 && !p.data && !/^(\.\/|this\b)/.test(p.original) && helpers.has(p.parts[0] as string);
        if (bareHelper) continue;
        m.params = lookupArgs(p);
        m.path = path(LOOKUP_TEXT, p.loc) as unknown as ExprNode;
      } else {
        // A helper call: its result becomes text through __orch_s, so an object returned by `default` is JSON.
        rewriteParams(m);
        const inner: CallNode = { type: 'SubExpression', path: m.path, params: m.params, hash: m.hash, ...(m.loc ? { loc: m.loc } : {}) };
        m.path = path(TO_TEXT, m.loc) as unknown as ExprNode;
        m.params = [inner];
        delete m.hash;
      }
    } else if (node.type === 'BlockStatement') {
      const b = node as CallNode & { program?: ProgramNode; inverse?: ProgramNode };
      rewriteParams(b);
      rewriteProgram(b.program, helpers);
      rewriteProgram(b.inverse, helpers);
    }
  }
}

export function rewriteTemplate(program: unknown, helpers: ReadonlySet<string>): void {
  rewriteProgram(program as ProgramNode, helpers);
}

function wrapProgram(program: ProgramNode | undefined, helper: string): void {
  if (!program) return;
  for (const node of program.body) {
    if (node.type === 'MustacheStatement') {
      const m = node as CallNode;
      // A literal ({{"x"}}, {{1}}) is its own argument; a path or helper becomes a sub-expression of the wrapper.
      const inner: ExprNode = isPath(m.path)
        ? ({ type: 'SubExpression', path: m.path, params: m.params, hash: m.hash, ...(m.loc ? { loc: m.loc } : {}) } as CallNode)
        : m.path;
      m.path = path(helper, m.loc) as unknown as ExprNode;
      m.params = [inner];
      delete m.hash;
    } else if (node.type === 'BlockStatement') {
      const b = node as CallNode & { program?: ProgramNode; inverse?: ProgramNode };
      wrapProgram(b.program, helper);
      wrapProgram(b.inverse, helper);
    }
  }
}

/** After rewriteTemplate: every mustache's output goes through `helper` (shell templates, ./shell.ts). */
export function wrapMustaches(program: unknown, helper: string): void {
  wrapProgram(program as ProgramNode, helper);
}

// Handlebars' lexer reads a numeric *last* segment (`{{input.tags.0}}`, `{{a.b.1}}`) as a number literal and
// refuses the template, although `{{review.agents.0.output}}` parses. Such a segment is rewritten to the
// equivalent segment-literal form `.[0]` inside mustaches, outside quoted strings. Number literals (`0.5`, `-1`)
// start with a digit or a sign and are left alone.
const MUSTACHE = /\{\{(?!!)([\s\S]*?)\}\}/g;
const QUOTED = /("(?:[^"\\]|\\.)*"|'(?:[^'\\]|\\.)*')/;
const TRAILING_NUMBER = /([A-Za-z_$@\]][\w$-]*(?:\.(?:[\w$-]+|\[[^\]]*\]))*)\.(\d+)(?=$|[\s})~=|\]])/g;

export function bracketNumericSegments(template: string): string {
  if (!/\.\d/.test(template)) return template;
  return template.replace(MUSTACHE, (whole: string, body: string) => {
    const parts = body.split(QUOTED);
    const fixed = parts.map((part, i) => (i % 2 === 1 ? part : part.replace(TRAILING_NUMBER, '$1.[$2]'))).join('');
    return fixed === body ? whole : `{{${fixed}}}`;
  });
}
