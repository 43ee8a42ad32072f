// Bounds on manifest YAML, checked before the document is composed. Composing is the expensive part (a 1.4 MB
// manifest with 100,000 `spec.env` keys held the event loop for minutes: the parser's duplicate-key check compares
// every key with every other), so size, node count, alias count and flow nesting are counted first by the YAML
// lexer alone, which is linear and allocates no nodes. What the lexer cannot see cheaply (block nesting depth,
// duplicate keys) is checked on the composed document by walkLimits(), also in linear time.
import { isAlias, isMap, isPair, isScalar, isSeq, Lexer, type Document } from 'yaml';

export const MANIFEST_LIMITS = {
  /** Bytes of YAML text (UTF-8). Real manifests are a few KiB; a long system prompt fits many times over. */
  maxBytes: 256 * 1024,
  /** Scalars, collections and sequence items together. A large workflow (100 states) has about 2,000. */
  maxNodes: 5_000,
  /** Nesting of mappings and sequences. */
  maxDepth: 64,
  /** Alias references (`*name`); each expands the node it names. */
  maxAliases: 100,
} as const;

export interface LimitError {
  message: string;
  /** 413 when the text is too large, 422 for what is inside it. */
  tooLarge: boolean;
}

/** Counts what the lexer sees; the first limit crossed, or undefined. */
export function scanLimits(text: string): LimitError | undefined {
  const bytes = Buffer.byteLength(text, 'utf8');
  if (bytes > MANIFEST_LIMITS.maxBytes) {
    return { message: `manifest is ${bytes} bytes; at most ${MANIFEST_LIMITS.maxBytes} are accepted`, tooLarge: true };
  }
  let nodes = 0;
  let aliases = 0;
  let flowDepth = 0;
  for (const token of new Lexer().lex(text)) {
    const c = token[0];
    // \x1f marks a plain or block scalar; quotes open a quoted one; `-` is a sequence item; `{`/`[` open a collection.
    if (c === '\x1f' || c === '"' || c === "'" || token === '-' || token === '?') nodes++;
    else if (token === '{' || token === '[') {
      nodes++;
      if (++flowDepth > MANIFEST_LIMITS.maxDepth) return { message: `manifest nests deeper than ${MANIFEST_LIMITS.maxDepth} levels`, tooLarge: false };
    } else if (token === '}' || token === ']') flowDepth = Math.max(0, flowDepth - 1);
    else if (c === '*') aliases++;
    if (nodes > MANIFEST_LIMITS.maxNodes) return { message: `manifest has more than ${MANIFEST_LIMITS.maxNodes} keys and values`, tooLarge: false };
    if (aliases > MANIFEST_LIMITS.maxAliases) return { message: `manifest has more than ${MANIFEST_LIMITS.maxAliases} aliases`, tooLarge: false };
  }
  return undefined;
}

/**
 * Walks the composed document once: nesting depth, and keys repeated within one mapping (checked here with a set
 * per mapping instead of by the parser, whose check is quadratic). Keys must be scalars. Iterative, so a deep
 * document cannot exhaust the stack.
 */
export function walkLimits(doc: Document): { message: string; offset: number } | undefined {
  const stack: { node: unknown; depth: number }[] = [{ node: doc.contents, depth: 1 }];
  while (stack.length > 0) {
    const { node, depth } = stack.pop()!;
    if (isMap(node) || isSeq(node)) {
      if (depth > MANIFEST_LIMITS.maxDepth) return { message: `manifest nests deeper than ${MANIFEST_LIMITS.maxDepth} levels`, offset: node.range?.[0] ?? 0 };
    }
    if (isMap(node)) {
      const seen = new Set<string>();
      for (const item of node.items) {
        const key = item.key;
        if (key !== null && !isScalar(key)) return { message: 'mapping keys must be plain values', offset: node.range?.[0] ?? 0 };
        const name = key === null ? '' : `${typeof key.value}:${String(key.value)}`;
        if (seen.has(name)) return { message: 'Map keys must be unique', offset: key?.range?.[0] ?? node.range?.[0] ?? 0 };
        seen.add(name);
        stack.push({ node: item.value, depth: depth + 1 });
      }
    } else if (isSeq(node)) {
      for (const item of node.items) stack.push({ node: isPair(item) ? item.value : item, depth: depth + 1 });
    } else if (isAlias(node)) {
      // An alias points at a node already walked where it was defined.
    }
  }
  return undefined;
}
