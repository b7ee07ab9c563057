import { readdirSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { brotliCompressSync, constants, gzipSync } from 'node:zlib';
import tailwindcss from '@tailwindcss/vite';
import react from '@vitejs/plugin-react';
import { defineConfig, type Plugin } from 'vite';

/** Smaller files are sent as they are (compression would save less than a packet). */
const MIN_BYTES = 1024;

/**
 * Writes `<file>.br` and `<file>.gz` beside every script, stylesheet and page of the build, once,
 * at build time: the server sends the one the browser accepts (src/http/dashboard.ts) without
 * compressing anything per request.
 */
function precompress(): Plugin {
  let outDir = '';
  return {
    name: 'precompress',
    apply: 'build',
    configResolved(config) {
      outDir = path.resolve(config.root, config.build.outDir);
    },
    closeBundle() {
      const visit = (dir: string) => {
        for (const name of readdirSync(dir)) {
          const file = path.join(dir, name);
          if (statSync(file).isDirectory()) visit(file);
          else if (/\.(js|css|html|svg)$/.test(name)) {
            const bytes = readFileSync(file);
            if (bytes.length < MIN_BYTES) continue;
            writeFileSync(`${file}.br`, brotliCompressSync(bytes, { params: { [constants.BROTLI_PARAM_QUALITY]: 11 } }));
            writeFileSync(`${file}.gz`, gzipSync(bytes, { level: 9 }));
          }
        }
      };
      visit(outDir);
    },
  };
}

/** The API server the dev mode proxies to (`npm run dev:web`); `npm start` serves the built app itself. */
const api = process.env.API_URL ?? 'http://localhost:8080';

export default defineConfig({
  root: fileURLToPath(new URL('.', import.meta.url)),
  base: '/app/',
  plugins: [react(), tailwindcss(), precompress()],
  resolve: { alias: { '@': fileURLToPath(new URL('./src', import.meta.url)) } },
  // The shell is ~500 KB minified, ~155 KB gzip (bench/dashboard-size.mjs measures what is sent).
  build: { outDir: 'dist', emptyOutDir: true, reportCompressedSize: false, chunkSizeWarningLimit: 700 },
  server: {
    port: 5173,
    // Everything but the app itself goes to the API, so the session cookie is same-origin as in production.
    proxy: { '^/(?!app(/|$)|@|node_modules|src/)': { target: api, changeOrigin: false } },
  },
});
