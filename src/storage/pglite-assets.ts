// PGlite's two big files, read and compiled ahead: pglite.wasm (9 MB, PostgreSQL) compiled to a WebAssembly.Module
// and pglite.data (6 MB, its file system bundle) read into a Blob. Left to PGlite, it reads them only once it is
// constructed, i.e. after a fresh data dir's copy of the schema template (a `cp -r` of ~560 files) has finished, and
// the node's main thread waits idle for the copy and then for them (a CPU profile of `orch up`: ~0.6 s idle before
// PostgreSQL started; issue 15 item 4). Begun before the copy, they are read and compiled on other threads while it
// runs, and PGlite is handed them (its pgliteWasmModule and fsBundle options).
import { readFile } from 'node:fs/promises';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import type { PGliteOptions } from '@electric-sql/pglite';

/** WebAssembly.Module (this project's TypeScript libs do not declare the WebAssembly global). */
type WasmModule = NonNullable<PGliteOptions['pgliteWasmModule']>;
const { WebAssembly: wasmApi } = globalThis as unknown as { WebAssembly: { compile(bytes: Uint8Array): Promise<WasmModule> } };

export interface PgliteAssets {
  pgliteWasmModule: WasmModule;
  fsBundle: Blob;
}

let wasm: Promise<WasmModule> | undefined;
let bundle: Promise<Blob> | undefined;

function pgliteFile(name: string): string {
  return path.join(path.dirname(fileURLToPath(import.meta.resolve('@electric-sql/pglite'))), name);
}

/** Begins reading and compiling (once per process); a failure is left to PGlite, which then loads them itself. */
export function preloadPgliteAssets(): void {
  wasm ??= readFile(pgliteFile('pglite.wasm')).then((bytes) => wasmApi.compile(bytes));
  bundle ??= readFile(pgliteFile('pglite.data')).then((bytes) => new Blob([bytes]));
  wasm.catch(() => undefined);
  bundle.catch(() => undefined);
}

/**
 * The preloaded assets as PGlite options, or {} when they could not be loaded. The compiled module is kept for the
 * process (PGlite's instance holds its code anyway); the 6 MB bundle is handed out once and then dropped, so a
 * long-lived node does not keep it (a second PGlite in the process, as in tests, reads its own).
 */
export async function takePgliteAssets(): Promise<Partial<PgliteAssets>> {
  preloadPgliteAssets();
  const [mod, fs] = await Promise.allSettled([wasm!, bundle!]);
  bundle = undefined;
  return {
    ...(mod.status === 'fulfilled' ? { pgliteWasmModule: mod.value } : {}),
    ...(fs.status === 'fulfilled' ? { fsBundle: fs.value } : {}),
  };
}
