import { fileURLToPath } from 'node:url';
import tailwindcss from '@tailwindcss/vite';
import react from '@vitejs/plugin-react';
import { defineConfig } from 'vite';

/** The API server the dev mode proxies to (`npm run dev:web`); `npm start` serves the built app itself. */
const api = process.env.API_URL ?? 'http://localhost:8080';

export default defineConfig({
  root: fileURLToPath(new URL('.', import.meta.url)),
  base: '/app/',
  plugins: [react(), tailwindcss()],
  resolve: { alias: { '@': fileURLToPath(new URL('./src', import.meta.url)) } },
  // The shell is ~500 KB minified, ~155 KB gzip (bench/dashboard-size.mjs measures what is sent).
  build: { outDir: 'dist', emptyOutDir: true, reportCompressedSize: false, chunkSizeWarningLimit: 700 },
  server: {
    port: 5173,
    // Everything but the app itself goes to the API, so the session cookie is same-origin as in production.
    proxy: { '^/(?!app(/|$)|@|node_modules|src/)': { target: api, changeOrigin: false } },
  },
});
