// The dashboard's build (`npm run build:ui`): Preact and plain TS bundled by Vite into ui/dist, which is committed so
// that `npm ci && npm start` serves /ui with no build step (`npm run check:ui` fails when ui/dist is stale).
import { defineConfig } from 'vite';
import { fileURLToPath } from 'node:url';

const root = fileURLToPath(new URL('.', import.meta.url));

export default defineConfig({
  root,
  base: '/ui/',
  logLevel: 'warn',
  oxc: { jsx: { runtime: 'automatic', importSource: 'preact' } },
  build: {
    outDir: process.env.ORCH_UI_OUT_DIR ?? 'dist',
    emptyOutDir: true,
    sourcemap: false,
    target: 'es2022',
    reportCompressedSize: false,
  },
});
