// PGlite's two big files, read and compiled ahead: pglite.wasm (9 MB, PostgreSQL) compiled to a WebAssembly.Module
// and pglite.data (6 MB, its file system bundle) read into a Blob. Left to PGlite, it reads them only once it is
// constructed, i.e. after a fresh data dir's copy of the schema template (a `cp -r` of ~560 files) has finished, and
// the node's main thread waits idle for the copy and then for them (a CPU profile of `orch up`: ~0.6 s idle before
// PostgreSQL started; issue 15 item 4). Begun before the copy, they are read and compiled on other threads while it
// runs, and PGlite is handed them (its pgliteWasmModule and fsBundle options).
import { readFile } from 'node:fs/promises';
import v8 from 'node:v8';
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

/**
 * V8's budget before a WebAssembly function is recompiled by TurboFan (its optimising tier), ~28x V8's default of
 * 1,800,000. At the default, PostgreSQL's own start made hundreds of PGlite's functions "hot" at once, and their
 * optimising compiles took 1–1.8 s of CPU on V8's background threads during a node's start, on a 2-core machine
 * competing with the start itself (`orch up` process CPU 3.6 s at the default, 2.6 s with this, 1.85 s with
 * --liftoff-only; issue 15 item 4: start-up). Functions that stay hot (a busy node's statements) still reach it
 * and are optimised, later. Read when a module is compiled, so it is set before PGlite's is.
 */
export const WASM_TIERING_BUDGET = 50_000_000;
let flagged = false;

/** Begins reading and compiling (once per process); a failure is left to PGlite, which then loads them itself. */
export function preloadPgliteAssets(): void {
  if (!flagged) {
    flagged = true;
    // Process-wide, and PGlite is this process's only WebAssembly. A flag the command line set wins.
    if (!process.execArgv.some((a) => a.startsWith('--wasm-tiering-budget') || a === '--liftoff-only')) v8.setFlagsFromString(`--wasm-tiering-budget=${WASM_TIERING_BUDGET}`);
  }
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
