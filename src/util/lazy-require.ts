// Heavy CommonJS dependencies that most nodes never use (HTML to Markdown, the payment SDK, the Docker client),
// required on first use instead of imported when the node's modules load: each costs tenths of a second of every
// start (issue 15 item 4). Synchronous, so the code that uses them keeps its shape.
import { createRequire } from 'node:module';

const requireHere = createRequire(import.meta.url);

/** A loader of the package `id`: requires it the first time it is called, the same module after. */
export function lazyRequire<T>(id: string): () => T {
  let mod: T | undefined;
  return () => (mod ??= requireHere(id) as T);
}
