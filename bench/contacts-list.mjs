// Times GET /contacts against a running server (seed it with bench/seed-contacts.mjs).
//
//   node bench/contacts-list.mjs --base http://127.0.0.1:8080 --key sk_… [--runs 20] [--warmup 3]
//
// Each scenario is requested sequentially: warm-up runs, then --runs timed runs (wall time of
// the whole HTTP request, body read). Prints median, p95, min and max in ms, and the size of
// the answer. Exits non-zero on a non-200 answer. Not a test: numbers depend on the machine.
import process from 'node:process';
import console from 'node:console';
import { performance } from 'node:perf_hooks';

function arg(name, fallback) {
  const i = process.argv.indexOf(`--${name}`);
  return i > 0 && process.argv[i + 1] !== undefined ? process.argv[i + 1] : fallback;
}

const base = arg('base', process.env.BASE_URL ?? 'http://127.0.0.1:8080');
const key = arg('key', process.env.SECRET_KEY);
const runs = Number(arg('runs', '20'));
const warmup = Number(arg('warmup', '3'));
if (!key) {
  console.error('usage: node bench/contacts-list.mjs --base http://127.0.0.1:8080 --key sk_…');
  process.exit(2);
}

async function get(query) {
  const started = performance.now();
  const res = await globalThis.fetch(`${base}/contacts${query}`, { headers: { authorization: `Bearer ${key}` } });
  const body = await res.json();
  const ms = performance.now() - started;
  if (res.status !== 200) throw new Error(`GET /contacts${query}: ${res.status} ${JSON.stringify(body)}`);
  return { ms, body };
}

const quantile = (sorted, q) => sorted[Math.min(sorted.length - 1, Math.ceil(q * sorted.length) - 1)];

async function scenario(name, query) {
  for (let i = 0; i < warmup; i++) await get(query);
  const times = [];
  let last;
  for (let i = 0; i < runs; i++) {
    last = await get(query);
    times.push(last.ms);
  }
  times.sort((a, b) => a - b);
  const f = (ms) => ms.toFixed(1).padStart(7);
  console.log(
    `${name.padEnd(34)} median ${f(quantile(times, 0.5))}  p95 ${f(quantile(times, 0.95))}  min ${f(times[0])}  max ${f(times[times.length - 1])}` +
      `  rows ${String(last.body.data.length).padStart(3)}  total ${last.body.total}`,
  );
  return last.body;
}

console.log(`${base}  ${runs} runs after ${warmup} warm-up, times in ms`);
const first = await scenario('first page (total)', '');
await scenario('first page limit=100 (total)', '?limit=100');
await scenario('second page (cursor, no total)', `?cursor=${encodeURIComponent(first.cursor)}`);
await scenario('sort=email asc (total)', '?sort=email&dir=asc');
await scenario('subscribed=false (total)', '?subscribed=false');
await scenario('search=proton (~1%)', '?search=proton');
await scenario('search=ada.lovelace (~0.04%)', '?search=ada.lovelace');
await scenario('search=lovelace12345 (rare)', '?search=lovelace12345');
await scenario('search=gmail (~25%)', '?search=gmail');
await scenario('search=com (~93%, full scan)', '?search=com');
