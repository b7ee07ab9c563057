// Times the campaign page's insight reads (GET /campaigns/:id/stats/timeseries, /links, /bounces)
// on a big campaign, against a running server, from this separate client process (seed it with
// bench/seed-campaign.mjs; results in bench/README.md "Campaign insight").
//
//   node bench/campaign-insight.mjs --base http://127.0.0.1:8080 --key sk_… --campaign <uuid>
//        [--runs 20] [--warmup 3] [--target 300]
//
// Each scenario is requested sequentially: warm-up runs, then --runs timed runs (wall time of the
// whole HTTP request, body read). Prints median, p95 and max in ms, the answer's size and a
// sample. Exits non-zero on a non-200 answer, or when a scenario's p95 is over --target ms.
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
const campaign = arg('campaign', undefined);
const runs = Number(arg('runs', '20'));
const warmup = Number(arg('warmup', '3'));
const target = Number(arg('target', '300'));
if (!key || !campaign) {
  console.error('usage: node bench/campaign-insight.mjs --base http://127.0.0.1:8080 --key sk_… --campaign <uuid>');
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

function sample(body) {
  const data = body.data ?? [];
  if (data[0]?.date !== undefined) {
    const t = data.reduce((a, p) => ({ delivered: a.delivered + p.delivered, opened: a.opened + p.opened, clicked: a.clicked + p.clicked, bounced: a.bounced + p.bounced }), { delivered: 0, opened: 0, clicked: 0, bounced: 0 });
    return `${data.length} points, ${JSON.stringify(t)}`;
  }
  if (data[0]?.url !== undefined) return `${data.length} links, clickedEmails ${body.clickedEmails}, first ${JSON.stringify(data[0])}`;
  return `${data.length} rows, total ${body.total}, hasMore ${body.hasMore}, first ${JSON.stringify(data[0])?.slice(0, 160)}`;
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
  const [p50, p95, max] = [quantile(times, 0.5), quantile(times, 0.95), times[times.length - 1]];
  if (p95 > target) failures.push(name);
  console.log(`${name.padEnd(44)} median ${p50.toFixed(1).padStart(6)} ms  p95 ${p95.toFixed(1).padStart(6)} ms  max ${max.toFixed(1).padStart(6)} ms  ${String(last.bytes).padStart(7)} B  ${sample(last.body)}`);
}

const c = `/campaigns/${campaign}`;
await scenario('timeseries, default range, by day (UTC)', `${c}/stats/timeseries?interval=day`);
await scenario('timeseries, default range, by hour (UTC)', `${c}/stats/timeseries?interval=hour`);
await scenario('timeseries, default range, by hour (Kolkata)', `${c}/stats/timeseries?interval=hour&tz=Asia/Kolkata`);
await scenario('timeseries, first 3 days by hour (the page)', `${c}/stats/timeseries?interval=hour&tz=Europe/Berlin&endDate=${new Date(Date.now() - 7 * 86_400_000).toISOString()}`);
const yearAgo = new Date(Date.now() - 365 * 86_400_000).toISOString().slice(0, 10);
await scenario('timeseries, 366 days by hour (8,784 points)', `${c}/stats/timeseries?interval=hour&startDate=${yearAgo}&endDate=${new Date().toISOString().slice(0, 10)}`);
await scenario('links, top 10', `${c}/links`);
await scenario('links, top 100', `${c}/links?limit=100`);
await scenario('bounces, first page (with total)', `${c}/bounces`);
await scenario('bounces, first page of 100', `${c}/bounces?limit=100`);
// A deep page: walk 50 pages of 100 to get its cursor, then time that page.
let cursor;
for (let i = 0; i < 50; i++) {
  const { body } = await get(`${c}/bounces?limit=100${cursor ? `&cursor=${cursor}` : ''}`);
  if (!body.cursor) break;
  cursor = body.cursor;
}
if (cursor) await scenario('bounces, page 51 of 100', `${c}/bounces?limit=100&cursor=${cursor}`);
await scenario('stats (the funnel, existing route)', `${c}/stats`);

if (failures.length > 0) {
  console.error(`p95 over ${target} ms: ${failures.join(', ')}`);
  process.exit(1);
}
