// The gateway's shared bounds on what a caller sends, before any route sees it (docs/SECURITY.md "Input bounds and
// bad input"):
// - JSON bodies are scanned once (linear, no allocation) for nesting depth and node count before JSON.parse: parsing
//   a deeply nested or many-keyed body holds the event loop (100,000 nested arrays: 0.2 s), and so does every walk
//   over the result afterwards. Over the limits: 422 (depth) or 413 (nodes), not parsed at all.
// - No string a caller sends may contain NUL (U+0000): PostgreSQL text and jsonb cannot store it, so it used to end in
//   a 500 from the database. JSON bodies, path parameters and query strings are checked here, answering 400 naming
//   the field. Bodies that routes parse themselves (webhooks, SEAL envelopes) call firstNul() on their value.
import type { FastifyInstance } from 'fastify';
import { Errors, OrchError } from '../../errors/catalog.ts';
import { refuseNul } from '../../util/no-nul.ts';

export const JSON_LIMITS = {
  /** Nesting of objects and arrays. The deepest real body (an MCP tool call's arguments) has about 8. */
  maxDepth: 64,
  /** Objects, arrays and comma-separated members together. */
  maxNodes: 50_000,
} as const;

const QUOTE = 0x22;
const BACKSLASH = 0x5c;
const COMMA = 0x2c;
const OPEN_OBJECT = 0x7b;
const CLOSE_OBJECT = 0x7d;
const OPEN_ARRAY = 0x5b;
const CLOSE_ARRAY = 0x5d;

/** One pass over JSON text: the first limit crossed, and whether a string escapes a NUL (`\u0000`). */
export function scanJson(text: string): { over?: OrchError; nul: boolean } {
  let depth = 0;
  let nodes = 0;
  let nul = false;
  let inString = false;
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (inString) {
      if (c === BACKSLASH) {
        if (text.startsWith('u0000', i + 1)) nul = true;
        i++;
      } else if (c === QUOTE) inString = false;
      continue;
    }
    if (c === QUOTE) inString = true;
    else if (c === OPEN_OBJECT || c === OPEN_ARRAY) {
      nodes++;
      if (++depth > JSON_LIMITS.maxDepth) {
        return { over: new OrchError(Errors.VALIDATION, `request body nests deeper than ${JSON_LIMITS.maxDepth} levels`), nul };
      }
    } else if (c === CLOSE_OBJECT || c === CLOSE_ARRAY) depth--;
    else if (c === COMMA) nodes++;
    if (nodes > JSON_LIMITS.maxNodes) {
      return { over: new OrchError(Errors.PAYLOAD_TOO_LARGE, `request body has more than ${JSON_LIMITS.maxNodes} values`), nul };
    }
  }
  return { nul };
}

/** JSON text within JSON_LIMITS and without NUL → its value; a clear 4xx OrchError otherwise (bad JSON is 400). */
export function parseBoundedJson(text: string, what = 'body'): unknown {
  const scan = scanJson(text);
  if (scan.over) throw scan.over;
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch (err) {
    throw new OrchError(Errors.BAD_REQUEST, `${what} is not valid JSON: ${(err as Error).message}`);
  }
  if (scan.nul) refuseNul(value, what);
  return value;
}

/**
 * Replaces the JSON body parser with the bounded one (same prototype-poisoning protection: fastify's own parser
 * runs after the scan) and checks path parameters and query strings for NUL. Install before any route.
 */
export function installInputGuard(app: FastifyInstance): void {
  const fastifyJson = app.getDefaultJsonParser('error', 'error');
  app.removeContentTypeParser('application/json');
  app.addContentTypeParser('application/json', { parseAs: 'string' }, (request, body, done) => {
    const text = body as string;
    const scan = scanJson(text);
    if (scan.over) return done(scan.over, undefined);
    fastifyJson(request, text, (err, value) => {
      if (err) return done(err, undefined);
      if (scan.nul) {
        try {
          refuseNul(value, 'body');
        } catch (e) {
          return done(e as Error, undefined);
        }
      }
      done(null, value);
    });
  });
  // The callback form: nothing here waits (an async hook costs a promise and a microtask hop per request).
  app.addHook('preValidation', (request, _reply, done) => {
    try {
      for (const [where, values] of [['path parameter', request.params], ['query parameter', request.query]] as const) {
        if (typeof values !== 'object' || values === null) continue;
        for (const [name, v] of Object.entries(values)) refuseNul(v, `${where} ${name}`);
      }
    } catch (err) {
      done(err as Error);
      return;
    }
    done();
  });
}
