// CPU per call of the MIME building (src/mail/mime.ts: the fast path, and MailComposer as before it)
// beside the text part and the DKIM signature.
//   node --import tsx bench/mime.mjs [--calls 3000] [--rounds 5]
// Prints the median of the rounds (µs of process CPU, user + system, per call) and the load average.
import { generateKeyPairSync } from 'node:crypto';
import { readFileSync } from 'node:fs';
import process from 'node:process';
import console from 'node:console';
import { parseArgs } from 'node:util';
import { htmlToText } from '../src/mail/render.ts';
import { buildMime, composeMime } from '../src/mail/mime.ts';
import { dkimSign } from '../src/mail/dkim.ts';

const { values } = parseArgs({ options: { calls: { type: 'string', default: '3000' }, rounds: { type: 'string', default: '5' } } });
const calls = Number(values.calls);
const rounds = Number(values.rounds);

const SMALL = `<html><body><table><tr><td style="font-family:Arial,sans-serif"><h1>Hello Bench</h1><p>Your order <b>o-1</b> is confirmed.
<a href="https://shop.example/orders/o-1">View your order</a></p><p>Thanks for shopping with us.</p><p style="color:#888">Shop Inc., 1 Main Street</p></td></tr></table></body></html>`;
const items = Array.from({ length: 33 }, (_, i) => `<p style="margin:0 0 8px">Item ${i + 1}: Bench, a line of your order summary with its price and quantity.</p>`);
const LARGE = SMALL.replace('</td>', `${items.join('\n')}</td>`);
// ~4 KB of text, as a caller-supplied text part (the generated one of the small body is ~150 B).
const TEXT = Array.from({ length: 50 }, (_, i) => `Line ${i + 1} of the plain-text part: your order summary, its price and quantity.`).join('\n');

const { privateKey } = generateKeyPairSync('rsa', { modulusLength: 2048, privateKeyEncoding: { type: 'pkcs8', format: 'pem' }, publicKeyEncoding: { type: 'spki', format: 'pem' } });
const key = { domainName: 'example.com', keySelector: 's1', privateKey };

async function perCall(f) {
  const results = [];
  for (let r = 0; r < rounds; r++) {
    for (let i = 0; i < 200; i++) await f();
    const start = process.cpuUsage();
    for (let i = 0; i < calls; i++) await f();
    const used = process.cpuUsage(start);
    results.push((used.user + used.system) / calls);
  }
  results.sort((a, b) => a - b);
  return results[Math.floor(results.length / 2)];
}

for (const [name, html] of [['300 B', SMALL], ['4 KB', LARGE]]) {
  const input = {
    from: { address: 'orders@example.com', name: 'Shop' },
    to: { address: 'a@example.net', name: 'Ada' },
    subject: 'Order o-1 confirmed',
    html,
    text: TEXT,
    messageId: '<0b5c1e4e-1@example.com>',
    date: new Date(),
    preparedHeaders: { 'List-Unsubscribe': '<https://mail.example.com/unsubscribe/abc.def>', 'List-Unsubscribe-Post': 'List-Unsubscribe=One-Click' },
  };
  const raw = await buildMime(input);
  console.log(`html ${name} (${html.length} B), text ${TEXT.length} B, message ${raw.length} B`);
  console.log(`  buildMime  ${(await perCall(() => buildMime(input))).toFixed(1)} µs CPU per call (fast path)`);
  console.log(`  composeMime ${(await perCall(() => composeMime(input))).toFixed(1)} µs CPU per call (nodemailer MailComposer, as before)`);
  console.log(`  htmlToText ${(await perCall(() => htmlToText(html))).toFixed(1)} µs CPU per call`);
  console.log(`  dkimSign   ${(await perCall(() => dkimSign(raw, key))).toFixed(1)} µs CPU per call`);
}
console.log(`load average ${readFileSync('/proc/loadavg', 'utf8').trim()}`);
