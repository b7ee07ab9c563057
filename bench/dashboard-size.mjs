// First load of the dashboard (issue 13): what a browser downloads to show /app before any
// route's own chunk — the entry script, the chunks it imports statically (modulepreload) and the
// CSS — gzip-compressed as a server or CDN would send them, and the size of every lazily loaded
// route chunk. Reads the production build (`npm run build:web`, web/dist).
//
//   node bench/dashboard-size.mjs [--dist web/dist] [--target 300]
//
// Exits 1 when the first load is over --target KB (gzip).
import { readFileSync, readdirSync } from 'node:fs';
import path from 'node:path';
import process from 'node:process';
import console from 'node:console';
import { gzipSync } from 'node:zlib';

function arg(name, fallback) {
  const i = process.argv.indexOf(`--${name}`);
  return i > 0 && process.argv[i + 1] !== undefined ? process.argv[i + 1] : fallback;
}

const dist = path.resolve(arg('dist', 'web/dist'));
const target = Number(arg('target', '300'));
const html = readFileSync(path.join(dist, 'index.html'), 'utf8');
const first = [...html.matchAll(/(?:src|href)="\/app\/(assets\/[^"]+\.(?:js|css))"/g)].map((m) => m[1]);
const theme = html.includes('/app/theme.js') ? ['theme.js'] : [];
const size = (file) => {
  const bytes = readFileSync(path.join(dist, file));
  return { raw: bytes.length, gzip: gzipSync(bytes, { level: 9 }).length };
};
const kb = (n) => (n / 1024).toFixed(1);

let total = { raw: 0, gzip: 0 };
console.log('first load (index.html, its scripts, preloads and styles):');
for (const file of [...theme, ...first]) {
  const s = size(file);
  total = { raw: total.raw + s.raw, gzip: total.gzip + s.gzip };
  console.log(`  ${file.padEnd(44)} ${kb(s.raw).padStart(8)} KB  gzip ${kb(s.gzip).padStart(7)} KB`);
}
console.log(`  ${'total'.padEnd(44)} ${kb(total.raw).padStart(8)} KB  gzip ${kb(total.gzip).padStart(7)} KB  (target < ${target} KB gzip)`);

const lazy = readdirSync(path.join(dist, 'assets'))
  .map((f) => `assets/${f}`)
  .filter((f) => f.endsWith('.js') && !first.includes(f))
  .map((f) => ({ f, ...size(f) }))
  .sort((a, b) => b.gzip - a.gzip);
console.log(`\nloaded on demand (${lazy.length} chunks: routes and what only they use):`);
for (const c of lazy) console.log(`  ${c.f.padEnd(44)} ${kb(c.raw).padStart(8)} KB  gzip ${kb(c.gzip).padStart(7)} KB`);
process.exit(total.gzip / 1024 < target ? 0 : 1);
