// The node's bundle: dist/cli/main.js and everything it imports, npm packages included, as a few ES modules in
// dist/bundle/ (esbuild, already installed as tsx's dependency). Called by scripts/build.mjs after tsc.
//
// Why (issue 15 item 4, docs/BENCHMARKS.md "start-up: one bundle"): `orch up` loaded ~1,600 files one by one (665
// ES modules, ~930 CommonJS), and Node's loader spent more on finding, reading and linking them (package.json
// lookups, stats, realpath, a compile per file) than the code's own work; the same code as a bundle loads in about
// half the CPU. The dynamic imports (commands, the node) stay separate chunks, so `orch --help` loads only the CLI.
//
// Not bundled (EXTERNAL): packages that find files next to their own code (PGlite's WebAssembly, native addons,
// pino's worker transports), and the ones orch loads on first use only (the LLM, MCP and payment SDKs, the OTLP
// exporters, dockerode, turndown): they stay lazy, and test/packaging/compiled-build.test.ts can see that a start
// does not load them. Code that finds files relative to itself (`import.meta.url`: migrations, the sandbox bootstrap,
// the dashboard, the spawner's child) gets its own file's URL, not the chunk's; CommonJS packages that use
// `__dirname` / `__filename` get theirs (an ES module has neither).
import { readFile, rm, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { pathToFileURL } from 'node:url';

export const EXTERNAL = [
  // Find their own files or native code next to them.
  '@electric-sql/pglite',
  'sodium-native',
  '@cocalc/fuse-native',
  'pino',
  'thread-stream',
  'pino-pretty',
  're2js',
  // Loaded on first use (src/agents/llm/sdks.ts, src/mcp/http.ts, src/util/lazy-require.ts, src/observability).
  'openai',
  '@anthropic-ai/sdk',
  '@modelcontextprotocol/sdk',
  '@opentelemetry/exporter-trace-otlp-grpc',
  '@opentelemetry/exporter-trace-otlp-proto',
  'stripe',
  'dockerode',
  'turndown',
  // Development tools.
  'tsx',
  'typescript',
  'esbuild',
];

/** The bundle's entry points, named by their path under dist/ without extension (bin/entry.js imports them). */
export const BUNDLED_ENTRIES = ['cli/main', 'storage/pglite-thread-worker'];

/**
 * Builds dist/bundle/ from dist/. Returns false (and says why) when esbuild is not installed: bin/entry.js then runs
 * dist/ file by file, which works the same, only slower to start.
 */
export async function bundleDist(root) {
  let esbuild;
  try {
    esbuild = await import(pathToFileURL(path.join(root, 'node_modules', 'esbuild', 'lib', 'main.js')).href);
  } catch (err) {
    process.stderr.write(`orch: esbuild is not installed (${err.message}); dist/ runs unbundled\n`);
    return false;
  }
  const dist = path.join(root, 'dist');
  const outdir = path.join(dist, 'bundle');
  /**
   * A file's own URL at run time: its path relative to dist/, resolved against `__orchDist` (dist/'s URL, from the
   * chunk's own import.meta.url, see the banner). Not `import.meta` itself: that would make esbuild read a CommonJS
   * file as an ES module.
   */
  const ownUrl = (file) => `new URL(${JSON.stringify(path.relative(dist, file).split(path.sep).join('/'))}, __orchDist)`;
  const ownPaths = {
    name: 'own-paths',
    setup(build) {
      build.onLoad({ filter: /\.(c|m)?js$/ }, async (args) => {
        let contents = await readFile(args.path, 'utf8');
        if (contents.includes('import.meta.url')) {
          contents = contents.replaceAll('import.meta.url', `${ownUrl(args.path)}.href`);
        }
        if (args.path.includes(`${path.sep}node_modules${path.sep}`) && /\b__(dirname|filename)\b/.test(contents)) {
          contents = `var __filename = __orchFileURLToPath(${ownUrl(args.path)}), __dirname = __orchDirname(__filename);\n${contents}`;
        }
        return { contents, loader: 'js' };
      });
    },
  };
  // Chunk names carry a hash of their content: the last build's would stay beside this one's.
  await rm(outdir, { recursive: true, force: true });
  let result;
  try {
    result = await esbuild.build({
      entryPoints: Object.fromEntries(BUNDLED_ENTRIES.map((e) => [e, path.join(dist, `${e}.js`)])),
      outdir,
      bundle: true,
      splitting: true,
      format: 'esm',
      platform: 'node',
      target: 'node20',
      chunkNames: 'chunks/[name]-[hash]',
      external: EXTERNAL,
      plugins: [ownPaths],
      metafile: true,
      absWorkingDir: root,
      // Maps back to src/*.ts through tsc's maps (`node --enable-source-maps` for stack traces in the sources).
      sourcemap: 'linked',
      logLevel: 'error',
      // CommonJS packages inside an ES module need `require` (esbuild's shim calls it); ownUrl's helpers.
      banner: {
        js: [
          "import { createRequire as __orchCreateRequire } from 'node:module';",
          "import { fileURLToPath as __orchFileURLToPath } from 'node:url';",
          "import { dirname as __orchDirname } from 'node:path';",
          'const require = __orchCreateRequire(import.meta.url);',
          // Every chunk is one level under dist/bundle/ (cli/main.js, chunks/…).
          "const __orchDist = new URL('../../', import.meta.url);",
        ].join(' '),
      },
    });
  } catch (err) {
    // esbuild without its platform binary (`npm ci --omit=optional`, as the image's build stage) fails here.
    await rm(outdir, { recursive: true, force: true });
    process.stderr.write(`orch: could not bundle dist/ (${err.message}); dist/ runs unbundled\n`);
    return false;
  }
  // Which files each output holds (paths relative to the root): a module trace of a run that loaded chunks is read
  // back as the files it ran (test/packaging/compiled-build.test.ts, test/support/bundle-contents.ts).
  const contents = Object.fromEntries(
    Object.entries(result.metafile.outputs)
      .filter(([out]) => out.endsWith('.js'))
      .map(([out, { inputs }]) => [path.relative(outdir, path.resolve(root, out)), Object.keys(inputs).map((i) => path.relative(root, path.resolve(root, i)))]),
  );
  await writeFile(path.join(outdir, 'contents.json'), JSON.stringify(contents));
  return true;
}
