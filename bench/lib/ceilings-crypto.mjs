// CPU ceilings of DKIM signing in bench/ceilings.mjs, on one core (this thread): crypto.sign with
// RSA-2048 and Ed25519 over a DKIM-sized header block, and SHA-256 of a 4 KB body.
import { createHash, generateKeyPairSync, randomBytes, sign } from 'node:crypto';
import process from 'node:process';
import { performance } from 'node:perf_hooks';
import { Buffer } from 'node:buffer';

/**
 * Calls `op` back to back for `seconds` (checking the clock every 32 calls). Returns operations
 * per second of wall time and per CPU second of this process (one busy thread: one core's worth,
 * whatever else the machine runs), with the wall and CPU seconds.
 */
function rate(op, seconds) {
  for (let i = 0; i < 64; i++) op(); // warm-up
  const cpu0 = process.cpuUsage();
  const started = performance.now();
  const until = started + seconds * 1000;
  let count = 0;
  while (performance.now() < until) {
    for (let i = 0; i < 32; i++) op();
    count += 32;
  }
  const wall = (performance.now() - started) / 1000;
  const used = process.cpuUsage(cpu0);
  const cpu = (used.user + used.system) / 1e6;
  return { perSecond: count / wall, perCpuSecond: count / cpu, wall, cpu };
}

/** The header block a DKIM signature covers (relaxed canonicalisation), about 400 bytes. */
const SIGNED_HEADERS = Buffer.from(
  [
    'from:Bench <sender@bench-sender.example>',
    'to:<rcpt@example.com>',
    'subject:Ceiling',
    'date:Sat, 28 Nov 2026 10:00:00 +0000',
    'message-id:<1.abcdef@bench-sender.example>',
    'mime-version:1.0',
    'content-type:text/html; charset=utf-8',
    `dkim-signature:v=1; a=rsa-sha256; c=relaxed/relaxed; d=bench-sender.example; s=bench; h=from:to:subject:date:message-id:mime-version:content-type; bh=${randomBytes(32).toString('base64')}; b=`,
  ].join('\r\n'),
);

export function measureRsa(seconds) {
  const { privateKey } = generateKeyPairSync('rsa', { modulusLength: 2048 });
  return rate(() => sign('sha256', SIGNED_HEADERS, privateKey), seconds);
}

export function measureEd25519(seconds) {
  const { privateKey } = generateKeyPairSync('ed25519');
  // RFC 8463: the Ed25519 signature is over the SHA-256 of the header block.
  return rate(() => sign(null, createHash('sha256').update(SIGNED_HEADERS).digest(), privateKey), seconds);
}

export function measureSha256(seconds) {
  const body = randomBytes(4096);
  return rate(() => createHash('sha256').update(body).digest(), seconds);
}
