import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadConfig } from '../../../src/config.js';
import { createVerp, returnPathsOf } from '../../../src/modules/bounces/index.js';
import { TEST_SECRET } from '../../helpers/app.js';
import { type SmtpSink, startSmtpSink } from '../../helpers/smtp-sink.js';
import { createSendTestApp, newSender, type SendTestApp } from '../emails/helpers.js';
import { deliver } from './helpers.js';

describe('VERP addresses', () => {
  const verp = createVerp(TEST_SECRET, 'Bounces.Example.com');

  it('name the email they were minted for, in a 45-character local part, whatever the case', () => {
    const id = randomUUID();
    const address = verp.address(id);
    expect(address).toMatch(/^b-[a-z2-7]{26}-[a-z2-7]{16}@bounces\.example\.com$/);
    expect(address.split('@')[0]).toHaveLength(45);
    expect(verp.emailIdOf(address)).toBe(id);
    expect(verp.emailIdOf(address.toUpperCase())).toBe(id);
    // Every id round-trips (all bit patterns of the encoding).
    for (const other of ['00000000-0000-0000-0000-000000000000', 'ffffffff-ffff-ffff-ffff-ffffffffffff', randomUUID()]) expect(verp.emailIdOf(verp.address(other))).toBe(other);
  });

  it('do not verify when any character of the id or signature changes, or the encoding is not canonical', () => {
    const address = verp.address(randomUUID());
    const local = address.split('@')[0] ?? '';
    for (let i = 2; i < local.length; i++) {
      if (local[i] === '-') continue;
      const changed = `${local.slice(0, i)}${local[i] === 'a' ? 'b' : 'a'}${local.slice(i + 1)}@bounces.example.com`;
      expect(verp.emailIdOf(changed), changed).toBeUndefined();
    }
    expect(verp.emailIdOf('b-x@bounces.example.com')).toBeUndefined();
    expect(verp.emailIdOf('postmaster@bounces.example.com')).toBeUndefined();
  });

  it('are bound to the secret and to the bounce domain', () => {
    const id = randomUUID();
    expect(verp.emailIdOf(createVerp('another-secret-0123456789abcdefghijklmnop', 'bounces.example.com').address(id))).toBeUndefined();
    const elsewhere = createVerp(TEST_SECRET, 'bounces.other.example').address(id);
    expect(verp.emailIdOf(elsewhere)).toBeUndefined();
    expect(verp.emailIdOf(elsewhere.replace('bounces.other.example', 'bounces.example.com'))).toBeUndefined();
  });

  it('are off without BOUNCE_DOMAIN; BOUNCE_DOMAIN must be a domain name and INBOUND_SMTP_PORT needs it', () => {
    const base = { SECRET: TEST_SECRET, DATABASE_URL: 'postgres://localhost/x' };
    expect(returnPathsOf(loadConfig(base))).toBeUndefined();
    expect(loadConfig({ ...base, BOUNCE_DOMAIN: 'Bounces.Example.com.' }).bounceDomain).toBe('bounces.example.com');
    expect(() => loadConfig({ ...base, BOUNCE_DOMAIN: 'not a domain' })).toThrow(/BOUNCE_DOMAIN must be a domain name/);
    expect(() => loadConfig({ ...base, INBOUND_SMTP_PORT: '2525' })).toThrow(/BOUNCE_DOMAIN must be set with INBOUND_SMTP_PORT/);
    expect(() => loadConfig({ ...base, BOUNCE_DOMAIN: 'b.example', INBOUND_SMTP_PORT: '2525', INBOUND_SMTP_TLS_CERT: '/nonexistent.pem' })).toThrow(/INBOUND_SMTP_TLS_KEY must be set/);
    const inbound = loadConfig({ ...base, BOUNCE_DOMAIN: 'b.example', INBOUND_SMTP_PORT: '2525' }).inboundSmtp;
    expect(inbound).toMatchObject({ port: 2525, host: '0.0.0.0', tls: undefined, maxSizeBytes: 10 * 1024 * 1024, messagesPerMinute: 600, connectionsPerMinute: 120 });
    expect(loadConfig(base).inboundSmtp).toBeUndefined();
  });
});

describe('without BOUNCE_DOMAIN', () => {
  let sink: SmtpSink;
  let t: SendTestApp;
  beforeAll(async () => {
    sink = await startSmtpSink();
    t = await createSendTestApp({ env: { SMTP_URL: sink.url } });
    await t.runWorker();
  }, 60_000);
  afterAll(async () => {
    await t?.close();
    await sink?.close();
  });

  it('the envelope sender is the From address, as before', async () => {
    const sender = await newSender(t);
    const d = await deliver(t, sink, sender, `r${randomUUID().slice(0, 8)}@recipient.example`);
    expect(d.returnPath).toBe(sender.from);
  });
});
