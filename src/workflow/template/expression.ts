// The evaluator of `custom` transition expressions after rendering: `<`, `>`, `<=`, `>=`, `==`, `!=`, `&&`, `||`,
// `!`, parentheses, numbers, quoted strings, true/false/null (seed 002). jsep parses the text into an AST; this
// file walks that AST and knows only the node types above, so nothing of the expression is ever executed as code.
//
// Semantics (docs/WORKFLOWS.md "Templates, conditions and consensus"):
// - A bare word is its own text: `success == "success"` is true (so an unquoted rendered status still compares).
// - `==`/`!=`: number against number or numeric text compares numerically ("0" == 0); a boolean against a boolean
//   or the text true/false (any case); otherwise texts compare exactly. null equals only null.
// - `<` `>` `<=` `>=`: numerically when both sides are numbers or numeric text, else two texts compare by code
//   units; anything else is an error.
// - Truthiness: false, null, 0, NaN, "" and the texts "false" and "0" (trimmed, any case) are false.
// - A malformed expression, an unsupported operator or a missing key evaluates to false with a reason.
import jsep from 'jsep';

type Value = string | number | boolean | null;

class ExpressionError extends Error {}

const NUMERIC = /^\s*[+-]?(\d+(\.\d*)?|\.\d+)([eE][+-]?\d+)?\s*$/;

function asNumber(v: Value): number | undefined {
  if (typeof v === 'number') return v;
  if (typeof v === 'string' && NUMERIC.test(v)) return Number(v);
  return undefined;
}

function asBoolean(v: Value): boolean | undefined {
  if (typeof v === 'boolean') return v;
  if (typeof v === 'string') {
    const t = v.trim().toLowerCase();
    if (t === 'true') return true;
    if (t === 'false') return false;
  }
  return undefined;
}

export function truthy(v: Value): boolean {
  if (v === null || v === false) return false;
  if (typeof v === 'number') return v !== 0 && !Number.isNaN(v);
  if (typeof v === 'string') {
    const t = v.trim().toLowerCase();
    return t !== '' && t !== 'false' && t !== '0';
  }
  return true;
}

function equals(a: Value, b: Value): boolean {
  if (a === null || b === null) return a === b;
  if (typeof a === 'boolean' || typeof b === 'boolean') {
    const x = asBoolean(a);
    const y = asBoolean(b);
    return x !== undefined && x === y;
  }
  if (typeof a === 'number' || typeof b === 'number') {
    const x = asNumber(a);
    const y = asNumber(b);
    return x !== undefined && y !== undefined && x === y;
  }
  return a === b;
}

function compare(op: string, a: Value, b: Value): boolean {
  const x = asNumber(a);
  const y = asNumber(b);
  let order: number;
  if (x !== undefined && y !== undefined) order = x - y;
  else if (typeof a === 'string' && typeof b === 'string') order = a < b ? -1 : a > b ? 1 : 0;
  else throw new ExpressionError(`cannot compare ${JSON.stringify(a)} ${op} ${JSON.stringify(b)}`);
  if (Number.isNaN(order)) return false;
  switch (op) {
    case '<': return order < 0;
    case '>': return order > 0;
    case '<=': return order <= 0;
    default: return order >= 0;
  }
}

function evaluate(node: jsep.Expression): Value {
  switch (node.type) {
    case 'Literal': {
      const value = (node as jsep.Literal).value;
      if (value instanceof RegExp) throw new ExpressionError('regular expressions are not supported');
      return value;
    }
    case 'Identifier':
      return (node as jsep.Identifier).name;
    case 'UnaryExpression': {
      const u = node as jsep.UnaryExpression;
      const arg = evaluate(u.argument);
      if (u.operator === '!') return !truthy(arg);
      if (u.operator === '-' || u.operator === '+') {
        const n = asNumber(arg);
        if (n === undefined) throw new ExpressionError(`unary ${u.operator} needs a number, got ${JSON.stringify(arg)}`);
        return u.operator === '-' ? -n : n;
      }
      throw new ExpressionError(`operator ${u.operator} is not supported`);
    }
    case 'BinaryExpression': {
      const b = node as jsep.BinaryExpression;
      switch (b.operator) {
        case '&&': return truthy(evaluate(b.left)) && truthy(evaluate(b.right));
        case '||': return truthy(evaluate(b.left)) || truthy(evaluate(b.right));
        case '==': return equals(evaluate(b.left), evaluate(b.right));
        case '!=': return !equals(evaluate(b.left), evaluate(b.right));
        case '<': case '>': case '<=': case '>=': return compare(b.operator, evaluate(b.left), evaluate(b.right));
        default: throw new ExpressionError(`operator ${b.operator} is not supported (use < > <= >= == != && || !)`);
      }
    }
    default:
      throw new ExpressionError(`unsupported syntax (${node.type}); an expression compares values with < > <= >= == != && || !`);
  }
}

/** Evaluates an already-rendered expression. Never throws. */
export function evaluateRenderedExpression(text: string): { value: boolean; error?: string } {
  const missing = /<missing [^>]*>|<template error: [^>]*>/.exec(text);
  if (missing) return { value: false, error: `the expression refers to a missing value: ${missing[0]}` };
  if (text.trim() === '') return { value: false, error: 'the expression is empty' };
  try {
    return { value: truthy(evaluate(jsep(text))) };
  } catch (err) {
    const reason = err instanceof Error ? err.message : String(err);
    return { value: false, error: `cannot evaluate ${JSON.stringify(text)}: ${reason}` };
  }
}
