// Rendering of the Handlebars templates of seed 002 and evaluation of `custom` transition expressions.
// Templates render without HTML escaping; objects render as JSON; a path that does not resolve renders
// `<missing KEY: REASON>` (seed 002 "Missing key") and never throws; a template that does not parse renders
// `<template error: ...>`. Use checkTemplate() to refuse a broken template at deploy time.
import Handlebars from 'handlebars';
import { MissingValue, templateHelpers, toText } from './helpers.ts';
import { missingPlaceholder, walk } from './lookup.ts';
import { bracketNumericSegments, LOOKUP_MARKED, LOOKUP_RAW, LOOKUP_TEXT, rewriteTemplate, TO_TEXT, wrapMustaches } from './rewrite.ts';
import { SHELL_VALUE_HELPER, SHELL_VALUES_KEY, shellCommandOf, shellValueHelper, type ShellCommand } from './shell.ts';
import type { TemplateScope } from './scope.ts';
import { evaluateRenderedExpression } from './expression.ts';

const hb = Handlebars.create();
// `log` would write to the console from library code; templates have no business logging.
hb.unregisterHelper('log');
for (const [name, helper] of Object.entries(templateHelpers)) hb.registerHelper(name, helper);

interface HelperOptions { data?: { root?: unknown } }

/** Resolves the arguments built by rewrite.ts: (path, flavour, headName, headValue, ...rest, options). */
function resolve(context: unknown, args: unknown[]): { found: true; value: unknown } | { found: false; placeholder: string } {
  const options = args[args.length - 1] as HelperOptions;
  const [pathText, flavour, headName, headValue, ...rest] = args.slice(0, -1) as [string, string, string, unknown, ...string[]];
  const result = walk(headValue, rest);
  if (result.found) return result;
  const atRoot = (flavour === 'top' || flavour === 'this' || flavour === 'root') && (flavour === 'root' || context === options.data?.root);
  const segments = flavour === 'root' ? rest : [headName, ...rest];
  const resolved = flavour === 'root' ? result.depth - 1 : result.depth;
  return { found: false, placeholder: missingPlaceholder(pathText, segments, Math.max(0, resolved), atRoot) };
}

hb.registerHelper(LOOKUP_TEXT, function (this: unknown, ...args: unknown[]) {
  const r = resolve(this, args);
  return r.found ? toText(r.value) : r.placeholder;
});
hb.registerHelper(LOOKUP_RAW, function (this: unknown, ...args: unknown[]) {
  const r = resolve(this, args);
  return r.found ? r.value : undefined;
});
hb.registerHelper(LOOKUP_MARKED, function (this: unknown, ...args: unknown[]) {
  const r = resolve(this, args);
  return r.found ? r.value : new MissingValue(r.placeholder);
});
hb.registerHelper(TO_TEXT, (value: unknown) => toText(value));

const helperNames: ReadonlySet<string> = new Set(Object.keys(hb.helpers));
hb.registerHelper(SHELL_VALUE_HELPER, shellValueHelper as never);

type Compiled = (scope: TemplateScope, options?: { data: Record<string, unknown> }) => string;
const cache = new Map<string, Compiled>();
const CACHE_LIMIT = 1000;

/** `shell`: every mustache's output is handed to the shell-value helper (./shell.ts) instead of being inlined. */
function compile(template: string, shell = false): Compiled {
  const key = shell ? `\u0000shell\u0000${template}` : template;
  const hit = cache.get(key);
  if (hit) return hit;
  const ast = hb.parse(bracketNumericSegments(template));
  rewriteTemplate(ast, helperNames);
  if (shell) wrapMustaches(ast, SHELL_VALUE_HELPER);
  const fn = hb.compile(ast, { noEscape: true, strict: false, knownHelpers: { log: false } }) as Compiled;
  if (cache.size >= CACHE_LIMIT) {
    const oldest = cache.keys().next();
    if (!oldest.done) cache.delete(oldest.value);
  }
  cache.set(key, fn);
  return fn;
}

function message(err: unknown): string {
  return (err instanceof Error ? err.message : String(err)).trim().replace(/\s*\n\s*/g, ' ');
}

/** Undefined when the template parses and compiles, else the reason (for validation at deploy time). */
export function checkTemplate(template: string): string | undefined {
  try {
    compile(template)({ input: {}, workflow: { context: {}, storage: { shared_volumes: {} } }, blackboard: {}, state: {}, human: {}, execution: { id: '' } });
    return undefined;
  } catch (err) {
    return message(err);
  }
}

/**
 * The scope, or a function that builds it: the engine passes the latter, so a step whose templates are all literal
 * text (an `update_blackboard {...}` command, an unconditional transition) never builds one (a copy of the blackboard).
 */
export type ScopeArg = TemplateScope | (() => TemplateScope);

const scopeOf = (s: ScopeArg): TemplateScope => (typeof s === 'function' ? s() : s);

/** Text without an opening mustache has nothing to render: Handlebars would hand it back as it is (but for a NUL,
 * which its lexer refuses: such text still goes through it and renders its template error). */
const literal = (template: string): boolean => !template.includes('{{') && !template.includes('\u0000');

export function renderTemplate(template: string, scope: ScopeArg): string {
  if (literal(template)) return template;
  try {
    return compile(template)(scopeOf(scope));
  } catch (err) {
    return `<template error: ${message(err)}>`;
  }
}

/**
 * A template that is a shell command: the script with a variable reference per `{{…}}` expansion and the values in
 * ORCH_VALUE_<n> (./shell.ts: template values are data, never code). Throws when the template does not parse or a
 * NUL byte would reach the shell.
 */
export function renderShellTemplate(template: string, scope: ScopeArg): ShellCommand {
  if (template.includes('\u0000')) throw new Error('the command contains a NUL byte');
  const values: string[] = [];
  if (literal(template)) return shellCommandOf(template, values);
  let rendered: string;
  try {
    rendered = compile(template, true)(scopeOf(scope), { data: { [SHELL_VALUES_KEY]: values } });
  } catch (err) {
    throw new Error(`the command template does not render: ${message(err)}`);
  }
  return shellCommandOf(rendered, values);
}

/** The result of a custom condition with the reason it is false when it could not be evaluated. */
export function evaluateExpressionDetailed(expression: string, scope: ScopeArg): { value: boolean; error?: string } {
  const rendered = renderTemplate(expression, scope);
  return evaluateRenderedExpression(rendered);
}

/**
 * A `custom` condition: the expression is rendered first (`{{build.output.exit_code}} == 0` becomes `0 == 0`),
 * then evaluated by ./expression.ts. A malformed expression or a missing key is false, never an exception.
 */
export function evaluateExpression(expression: string, scope: ScopeArg): boolean {
  return evaluateExpressionDetailed(expression, scope).value;
}
