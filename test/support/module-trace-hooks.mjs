// Module hooks for module-trace.mjs (they run on Node's loader thread).
import { appendFileSync } from 'node:fs';

let file;

export function initialize(data) {
  file = data.file;
}

export async function resolve(specifier, context, next) {
  const resolved = await next(specifier, context);
  if (file && resolved.url.startsWith('file:')) appendFileSync(file, `${resolved.url}\n`);
  return resolved;
}
