// Times the activity routes against a running server holding a big project (bench/seed-insight.mjs:
// 1,000,000 contacts, 5,000,000 tracked events + their lifecycle events, 2,000,000 emails, 100
// campaigns, 100,000 workflow runs). A separate client process: start the server yourself.
//
//   node bench/activity.mjs --base http://127.0.0.1:8080 --key sk_… [--runs 20] [--warmup 3] [--target 300]
//
// Each scenario is requested sequentially: warm-up runs, then --runs timed runs (wall time of the
// whole HTTP request, body read). Prints median, p95, min and max in ms and what came back; marks a
// scenario whose p95 is over --target ms. Exits non-zero on a non-200 answer. Not a test: numbers
// depend on the machine (bench/activity.md).
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
  console.error('usage: node bench/activity.mjs --base http://127.0.0.1:8080 --key sk_…');
  process.exit(2);
}

async function get(path) {
  const started = performance.now();
  const res = await globalThis.fetch(`${base}${path}`, { headers: { authorization: `Bearer ${key}` } });
  const body = await res.json();
  const ms = performance.now() - started;
  if (res.status !== 200) throw new Error(`GET ${path}: ${res.status} ${JSON.stringify(body)}`);
  return { ms, body };
}

const quantile = (sorted, q) => sorted[Math.min(sorted.length - 1, Math.ceil(q * sorted.length) - 1)];
const over = [];

function describe(body) {
  if (typeof body.count === 'number') return `count ${body.count}`;
  if (!Array.isArray(body.data)) return '';
  const more = body.hasMore === undefined ? '' : `  hasMore ${body.hasMore}`;
  const total = body.total === undefined ? '' : `  total ${body.total}${body.totalCapped ? '+' : ''}`;
  return `items ${String(body.data.length).padStart(3)}${total}${more}`;
}

async function scenario(name, path) {
  for (let i = 0; i < warmup; i++) await get(path);
  const times = [];
  let last;
  for (let i = 0; i < runs; i++) {
    last = await get(path);
    times.push(last.ms);
  }
  times.sort((a, b) => a - b);
  const f = (ms) => ms.toFixed(1).padStart(7);
  const p95 = quantile(times, 0.95);
  if (p95 > target) over.push(name);
  console.log(
    `${name.padEnd(40)} median ${f(quantile(times, 0.5))}  p95 ${f(p95)}  min ${f(times[0])}  max ${f(times[times.length - 1])}  ${describe(last.body)}${p95 > target ? '  OVER' : ''}`,
  );
  return last.body;
}

/** The cursor of the n-th page (1-based) of `query`, reached by paging (not timed). */
async function cursorOfPage(query, n) {
  let cursor = null;
  for (let page = 1; page < n; page++) {
    const { body } = await get(`/activity?${query}${cursor ? `&cursor=${encodeURIComponent(cursor)}` : ''}`);
    if (!body.cursor) throw new Error(`${query}: only ${page} pages`);
    cursor = body.cursor;
  }
  return cursor;
}

const day = 86_400_000;
const iso = (ms) => new Date(ms).toISOString();
console.log(`${base}  ${runs} runs after ${warmup} warm-up, times in ms, target p95 < ${target} ms`);

const first = await scenario('first page (total)', '/activity');
await scenario('first page limit=100 (total)', '/activity?limit=100');
await scenario('second page (cursor)', `/activity?cursor=${encodeURIComponent(first.cursor)}`);
await scenario('page 50, limit=100', `/activity?limit=100&cursor=${encodeURIComponent(await cursorOfPage('limit=100', 50))}`);

const { body: types } = await get('/activity/types');
for (const { type } of types.data) await scenario(`types=${type}`, `/activity?types=${type}`);
await scenario('types=email.open,email.click', '/activity?types=email.open,email.click');
await scenario('types=email.complaint,workflow.failed,campaign.sent', '/activity?types=email.complaint,workflow.failed,campaign.sent');
await scenario('types=event.tracked, page 2', `/activity?types=event.tracked&cursor=${encodeURIComponent(await cursorOfPage('types=event.tracked', 2))}`);
await scenario('types=email.complaint, 365 days', `/activity?types=email.complaint&startDate=${iso(Date.now() - 366 * day)}`);

const contact = first.data.find((i) => i.contact)?.contact?.id;
await scenario('contactId (first page contact), 365 days', `/activity?contactId=${contact}&startDate=${iso(Date.now() - 366 * day)}`);
await scenario('contactId + types=email.open', `/activity?contactId=${contact}&types=email.open&startDate=${iso(Date.now() - 366 * day)}`);
await scenario('narrow old range (1 day, 200 days ago)', `/activity?startDate=${iso(Date.now() - 200 * day)}&endDate=${iso(Date.now() - 199 * day)}`);
await scenario('whole year (total capped)', `/activity?startDate=${iso(Date.now() - 366 * day)}`);

await scenario('recent-count (5 min)', '/activity/recent-count');
await scenario('recent-count minutes=60', '/activity/recent-count?minutes=60');
await scenario('types', '/activity/types');
await scenario('upcoming', '/activity/upcoming');
await scenario('upcoming daysAhead=90 limit=100', '/activity/upcoming?daysAhead=90&limit=100');

console.log(over.length ? `over ${target} ms (p95): ${over.join('; ')}` : `every scenario under ${target} ms (p95)`);
