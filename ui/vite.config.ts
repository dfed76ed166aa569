/** The dashboard build: `vite build --config ui/vite.config.ts` → dist/ui, served by the server at /ui/. */
import { fileURLToPath } from 'node:url';
import { defineConfig } from 'vite';

const here = fileURLToPath(new URL('.', import.meta.url));

export default defineConfig({
  root: here,
  base: '/ui/',
  logLevel: 'warn',
  build: {
    outDir: fileURLToPath(new URL('../dist/ui', import.meta.url)),
    emptyOutDir: true,
    target: 'es2022',
    // One small bundle: no source maps shipped, no inlined assets past 4 KiB.
    sourcemap: false,
    reportCompressedSize: false,
  },
});
