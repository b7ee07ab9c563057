// Benchmark of a campaign to 100,000 contacts, not a test: numbers depend on the machine.
//
//   node --import tsx bench/campaign.mjs                     # 100,000 contacts, every 20th unsubscribed
//   node --import tsx bench/campaign.mjs --contacts 20000 --unsubscribed-every 10
//   node --import tsx bench/campaign.mjs --contacts 1000000 --materialise-only   # stop after (a)
//
// Starts an SMTP sink (smtp-server, in this process) and the server as `ROLE=api` on a temp
// DATA_DIR (embedded PostgreSQL) with SMTP_URL at the sink, seeds --contacts contacts in one
// INSERT … SELECT, creates a MARKETING campaign to ALL through the API, starts a `ROLE=worker`
// process, then POST /campaigns/:id/send and measures:
//  (a) materialisation: from the send answer until total_recipients is set (the campaign-send job:
//      the email rows by two INSERT … SELECT transactions on one snapshot, then their delivery
//      batch jobs and total_recipients: docs/campaigns.md "Fan-out");
//  (b) delivery: until the campaign is SENT (every email finished), at the pipeline's full rate
//      (each email rendered per recipient at delivery, DKIM-signed);
// then checks that the sink got every email's Message-ID exactly once, that every subscribed
// contact got exactly one message and no unsubscribed one got any.
import process from 'node:process';
import console from 'node:console';
import { performance } from 'node:perf_hooks';
import { setTimeout as sleep } from 'node:timers/promises';
import { readFileSync } from 'node:fs';
import { cpuSeconds, json, postgresCpu, spawnServer, withDeliveryBench } from './lib/harness.mjs';

const arg = (name, fallback) => {
  const i = process.argv.indexOf(`--${name}`);
  return i > 0 && process.argv[i + 1] !== undefined ? process.argv[i + 1] : fallback;
};
const opts = {
  contacts: Number(arg('contacts', '100000')),
  // Default: 95,000 of 100,000 subscribed, so "none to unsubscribed contacts" is a real check.
  unsubscribedEvery: Number(arg('unsubscribed-every', '20')),
  // Stop once the emails are materialised (delivery of 1,000,000 would take most of an hour).
  materialiseOnly: process.argv.includes('--materialise-only'),
};
const fetch = globalThis.fetch;

const BODY = `<html><body><table><tr><td><h1>Hello {{firstName ?? there}}</h1><p>Our <b>{{plan}}</b> plan news.
<a href="https://shop.example/news">Read more</a></p><p>Thanks for reading.</p></td></tr></table></body></html>`;

async function seed(client, projectId) {
  const started = performance.now();
  await client.query(
    `INSERT INTO contacts (project_id, email, subscribed, data)
     SELECT $1, 'reader' || i || '@example.com', NOT ($2::int > 0 AND i % $2::int = 0),
            jsonb_build_object('firstName', 'Reader' || i, 'plan', CASE WHEN i % 3 = 0 THEN 'pro' ELSE 'free' END)
     FROM generate_series(1, $3::int) AS i`,
    [projectId, opts.unsubscribedEvery, opts.contacts],
  );
  await client.query('ANALYZE contacts');
  return (performance.now() - started) / 1000;
}

async function campaignPhase(ctx) {
  const { client, project } = ctx;
  const seedSeconds = await seed(client, project.id);
  const { rows: [{ n: expected }] } = await client.query(`SELECT count(*)::int AS n FROM contacts WHERE project_id = $1 AND subscribed`, [project.id]);
  console.log(`seeded ${opts.contacts} contacts (${expected} subscribed) in ${seedSeconds.toFixed(1)} s`);
  const headers = { authorization: `Bearer ${project.secret}`, 'content-type': 'application/json' };
  const created = await json(await fetch(`${ctx.base}/campaigns`, {
    method: 'POST', headers, body: JSON.stringify({ name: 'Bench', subject: 'News for {{firstName}}', body: BODY, from: `news@${ctx.domain}` }),
  }), 201);
  const id = created.data.id;
  const worker = await spawnServer({ ...ctx.env, ROLE: 'worker', DATABASE_URL: ctx.databaseUrl }, /ready: worker running/);
  const cpu0 = { pg: postgresCpu(ctx.api.pid), bench: process.cpuUsage() };
  const started = performance.now();
  await json(await fetch(`${ctx.base}/campaigns/${id}/send`, { method: 'POST', headers, body: '{}' }), 200);
  const answered = performance.now();
  let materialised;
  const samples = [];
  // Progress is read from the sink (in this process): counting the campaign's email rows every
  // 250 ms cost PostgreSQL ~60 ms a time at 95,000 rows, a quarter of a core taken from the pipeline.
  const sinkBefore = ctx.sink.messages.length;
  for (;;) {
    const { rows: [c] } = await client.query(`SELECT status, total_recipients FROM campaigns WHERE id = $1`, [id]);
    if (materialised === undefined && c.total_recipients > 0) materialised = (performance.now() - answered) / 1000;
    if (materialised !== undefined) samples.push([(performance.now() - started) / 1000, ctx.sink.messages.length - sinkBefore]);
    if (c.status === 'SENT' || (opts.materialiseOnly && materialised !== undefined) || performance.now() - started > 1_800_000) break;
    await sleep(250);
  }
  const seconds = (performance.now() - started) / 1000;
  const cpu = { worker: cpuSeconds(worker.pid), pg: postgresCpu(ctx.api.pid) - cpu0.pg, bench: process.cpuUsage(cpu0.bench) };
  await worker.stop();
  if (opts.materialiseOnly) {
    const { rows: [m] } = await client.query(`SELECT total_recipients FROM campaigns WHERE id = $1`, [id]);
    console.log(`
    materialise     ${m.total_recipients} recipients in ${materialised?.toFixed(2)} s after the send answer (send answered in ${((answered - started) / 1000).toFixed(2)} s)
    CPU seconds     worker node ${cpu.worker.toFixed(1)} s  postgres ${cpu.pg.toFixed(1)} s (load average ${readFileSync('/proc/loadavg', 'utf8').trim()})`);
    return;
  }
  const total = samples.at(-1)?.[1] ?? 0;
  const mid = samples.filter(([, n]) => n >= total * 0.1 && n <= total * 0.9);
  const steady = mid.length > 1 ? (mid.at(-1)[1] - mid[0][1]) / (mid.at(-1)[0] - mid[0][0]) : NaN;

  const { rows: emails } = await client.query(`SELECT message_id, to_email, status FROM emails WHERE campaign_id = $1`, [id]);
  const { rows: [counts] } = await client.query(`SELECT total_recipients, status FROM campaigns WHERE id = $1`, [id]);
  const received = ctx.sink.messages.filter((m) => m.messageId?.endsWith(`@${ctx.domain}>`));
  const distinct = new Set(received.map((m) => m.messageId));
  const missing = emails.filter((e) => !distinct.has(e.message_id)).length;
  // The headline counts what a user observes: the campaign's emails that reached the sink.
  const delivered = emails.length - missing;
  const perAddress = new Map();
  for (const m of received) for (const to of m.to) perAddress.set(to, (perAddress.get(to) ?? 0) + 1);
  const { rows: unsub } = await client.query(`SELECT email FROM contacts WHERE project_id = $1 AND NOT subscribed`, [project.id]);
  const toUnsubscribed = unsub.filter((u) => perAddress.has(u.email)).length;
  const twice = [...perAddress.values()].filter((n) => n > 1).length;
  console.log(`
    materialise     ${counts.total_recipients} recipients in ${materialised?.toFixed(2)} s after the send answer (send answered in ${((answered - started) / 1000).toFixed(2)} s)
    delivery        campaign ${counts.status} after ${seconds.toFixed(1)} s: ${delivered} delivered at the sink, ${(delivered / seconds).toFixed(0)} emails/s overall (steady 10–90%: ${steady.toFixed(0)}/s)
    statuses        ${JSON.stringify(emails.reduce((acc, e) => ({ ...acc, [e.status]: (acc[e.status] ?? 0) + 1 }), {}))}
    sink            ${received.length} messages, ${distinct.size} distinct Message-IDs, ${received.length - distinct.size} duplicates, ${missing} missing; ${twice} addresses twice; ${toUnsubscribed} to unsubscribed contacts; expected ${expected}
    CPU seconds     worker node ${cpu.worker.toFixed(1)} s  postgres ${cpu.pg.toFixed(1)} s  sink+bench ${((cpu.bench.user + cpu.bench.system) / 1e6).toFixed(1)} s`);
}

await withDeliveryBench({ name: 'campaign', keepRaw: false }, campaignPhase);
