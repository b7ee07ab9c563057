import { randomUUID } from 'node:crypto';
import pg from 'pg';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { createVerp } from '../../../src/modules/bounces/index.js';
import { cleanupServers, freePort, startServer } from '../../helpers/process.js';
import { fixture, smtpSend } from './helpers.js';
import { createOwnDatabase, type OwnDatabase } from '../../helpers/database.js';

const SECRET = 'server-test-secret-0123456789abcdefghijklmnop';
let databaseUrl = '';
let own: OwnDatabase | undefined;

beforeAll(async () => {
  own = await createOwnDatabase('bounces_server');
  databaseUrl = own.url;
});
afterEach(() => cleanupServers());
afterAll(async () => {
  await cleanupServers({ removeTemp: true });
  await own?.drop();
});

describe('the receiver in the server process', () => {
  it('starts with INBOUND_SMTP_PORT in the default role, takes reports for its VERP addresses only, stops on SIGTERM', { timeout: 90_000 }, async () => {
    const [port, smtpPort] = [await freePort(), await freePort()];
    const server = startServer({
      PORT: String(port), DATABASE_URL: databaseUrl, SECRET, BOUNCE_DOMAIN: 'bounces.server.test', INBOUND_SMTP_PORT: String(smtpPort), INBOUND_SMTP_HOST: '127.0.0.1',
    });
    await server.waitForLog(/^inbound SMTP receiver listening for bounces\.server\.test$/, 60_000);
    const address = createVerp(SECRET, 'bounces.server.test').address(randomUUID());
    const raw = fixture('out-of-office.eml', { verp: address, recipient: 'bob@recipient.example', messageId: '<m@x>' });
    expect(await smtpSend(smtpPort, address, raw)).toMatchObject({ ok: true });
    expect(await smtpSend(smtpPort, 'someone@example.com', raw)).toMatchObject({ ok: false, code: 550 });
    const client = new pg.Client({ connectionString: databaseUrl });
    await client.connect();
    const stored = (await client.query<{ kind: string; outcome: string; rcpt_to: string }>('SELECT kind, outcome, rcpt_to FROM inbound_feedback')).rows;
    await client.end();
    expect(stored).toEqual([{ kind: 'auto-reply', outcome: 'ignored', rcpt_to: address }]);

    server.child.kill('SIGTERM');
    expect(await server.waitForExit(20_000)).toEqual({ code: 0, signal: null });
    expect((await smtpSend(smtpPort, address, raw)).ok).toBe(false);
  });

  it('refuses to start with INBOUND_SMTP_PORT but no BOUNCE_DOMAIN, naming the variable', { timeout: 30_000 }, async () => {
    const server = startServer({ PORT: String(await freePort()), DATABASE_URL: databaseUrl, SECRET, INBOUND_SMTP_PORT: String(await freePort()) });
    expect((await server.waitForExit(20_000)).code).toBe(1);
    expect(server.errorLines()).toEqual(['error: BOUNCE_DOMAIN must be set with INBOUND_SMTP_PORT (the receiver accepts mail only for its bounce addresses)']);
  });
});
