// Times every analytics request and GET /activity/stats against a running server, from this
// separate client process (seed the project with bench/seed-insight.mjs; method and results in
// bench/analytics.md).
//
//   node bench/analytics.mjs --base http://127.0.0.1:8080 --key sk_… [--runs 20] [--warmup 3] [--target 300]
//
// Each scenario is requested sequentially: warm-up runs, then --runs timed runs (wall time of the
// whole HTTP request, body read). Prints median, p95 and max in ms, the size of the answer and a
// sample of it. Exits non-zero on a non-200 answer, or when a scenario's p95 is over --target ms.
// Not a test: numbers depend on the machine and on what else runs on it.
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
const target = Number(arg('target', '300'));
if (!key) {
  console.error('usage: node bench/analytics.mjs --base http://127.0.0.1:8080 --key sk_…');
  process.exit(2);
}

async function get(path) {
  const started = performance.now();
  const res = await globalThis.fetch(`${base}${path}`, { headers: { authorization: `Bearer ${key}` } });
  const text = await res.text();
  const ms = performance.now() - started;
  if (res.status !== 200) throw new Error(`GET ${path}: ${res.status} ${text.slice(0, 500)}`);
  return { ms, bytes: text.length, body: JSON.parse(text) };
}

const quantile = (sorted, q) => sorted[Math.min(sorted.length - 1, Math.ceil(q * sorted.length) - 1)];

/** What to print of an answer: its size in points/rows and a few numbers. */
function sample(body) {
  if (Array.isArray(body.data)) {
    const first = body.data[0];
    const totals = body.data.reduce((t, p) => ({ sent: t.sent + (p.sent ?? 0), opened: t.opened + (p.opened ?? 0) }), { sent: 0, opened: 0 });
    return body.data[0]?.date !== undefined
      ? `${body.data.length} points, sent ${totals.sent}, opened ${totals.opened}`
      : `${body.data.length} rows, first ${JSON.stringify(first)?.slice(0, 120)}`;
  }
  return JSON.stringify(body).slice(0, 160);
}

const failures = [];
async function scenario(name, path) {
  for (let i = 0; i < warmup; i++) await get(path);
  const times = [];
  let last;
  for (let i = 0; i < runs; i++) {
    last = await get(path);
    times.push(last.ms);
  }
  times.sort((a, b) => a - b);
  const p95 = quantile(times, 0.95);
  if (p95 > target) failures.push(`${name}: p95 ${p95.toFixed(1)} ms`);
  const f = (ms) => ms.toFixed(1).padStart(7);
  console.log(`${name.padEnd(44)} median ${f(quantile(times, 0.5))}  p95 ${f(p95)}  max ${f(times[times.length - 1])}  ${String(last.bytes).padStart(7)} B  ${sample(last.body)}`);
}

const day = (offset) => new Date(Date.now() + offset * 86_400_000).toISOString().slice(0, 10);
const year = `startDate=${day(-365)}&endDate=${day(0)}`; // 366 local days, today included

console.log(`${base}  ${runs} runs after ${warmup} warm-up each, times in ms, target p95 < ${target} ms`);
await scenario('timeseries (default: 30 days by day, UTC)', '/analytics/timeseries');
await scenario('timeseries 24 h by hour (default)', '/analytics/timeseries?interval=hour');
await scenario('timeseries 366 days by day, Europe/Berlin', `/analytics/timeseries?${year}&tz=Europe/Berlin`);
await scenario('timeseries 366 days by hour, UTC', `/analytics/timeseries?${year}&interval=hour`);
await scenario('timeseries 366 days by hour, Asia/Kathmandu', `/analytics/timeseries?${year}&interval=hour&tz=Asia/Kathmandu`);
await scenario('top-campaigns opens, limit 50', '/analytics/top-campaigns?limit=50');
await scenario('top-campaigns clicks, limit 50', '/analytics/top-campaigns?metric=clicks&limit=50');
await scenario('top-campaigns sent, limit 5', '/analytics/top-campaigns?metric=sent');
await scenario('campaign-stats', '/analytics/campaign-stats');
await scenario('top-events (default: 30 days)', '/analytics/top-events?limit=20');
await scenario('top-events 366 days, Asia/Kolkata', `/analytics/top-events?${year}&tz=Asia/Kolkata&limit=20`);
await scenario('top-events 7 days, date-times', `/analytics/top-events?startDate=${day(-7)}T10:07:00Z&endDate=${day(0)}T09:52:00Z`);
await scenario('activity/stats (default: 30 days)', '/activity/stats');
await scenario('activity/stats 366 days, America/New_York', `/activity/stats?${year}&tz=America/New_York`);

if (failures.length > 0) {
  console.log(`over ${target} ms: ${failures.join('; ')}`);
  process.exitCode = 1;
}
