import type { AddressInfo } from 'node:net';
import PlunkModule from '@plunk/node';
import type { Plunk as PlunkClient } from '@plunk/node/dist/lib/Plunk.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type TestProject, uniqueEmail } from '../helpers/accounts.js';
import { createSendTestApp, newSender, type SendTestApp } from '../modules/emails/helpers.js';

// @plunk/node is CommonJS with `exports.default`: depending on the loader's interop the
// default import is the class or the module object holding it.
const loaded: unknown = PlunkModule;
const Plunk = (typeof loaded === 'function' ? loaded : (loaded as { default: unknown }).default) as typeof PlunkClient;
if (typeof Plunk !== 'function') throw new Error('@plunk/node: no client class');

/**
 * Users migrating from Plunk keep @plunk/node unchanged: these tests drive the real client
 * against the app listening on loopback (its own database: /v1/send enqueues jobs).
 */
let t: SendTestApp;
let base: string;
let project: TestProject;
let from: string;
beforeAll(async () => {
  t = await createSendTestApp();
  await t.app.listen({ port: 0, host: '127.0.0.1' });
  base = `http://127.0.0.1:${(t.app.server.address() as AddressInfo).port}`;
  ({ project, from } = await newSender(t));
});
afterAll(() => t?.close());

const eventsNamed = (name: string) =>
  t.db.db.selectFrom('events').select('id').where('project_id', '=', project.id).where('name', '=', name).execute();

describe('the @plunk/node client against this API', () => {
  it.each([['/v1'], ['/v1/']])('tracks with the public key, base URL %s', async (suffix) => {
    const plunk = new Plunk(project.public, { baseUrl: `${base}${suffix}` });
    const event = `plunk_${suffix.length}`;
    const answer = await plunk.events.track({ email: uniqueEmail(), event, data: { plan: 'pro', once: { value: 'x', persistent: false } } });
    expect(answer.success).toBe(true);
    expect(await eventsNamed(event)).toHaveLength(1);
  });

  it('sends with the secret key: its body fields (type html, name, subscribed) are accepted', async () => {
    const plunk = new Plunk(project.secret, { baseUrl: `${base}/v1` });
    const to = uniqueEmail('plunk');
    const answer = await plunk.emails.send({ to, subject: 'Hello', body: '<p>Hi</p>', from, name: 'Hello Team', type: 'html', subscribed: false });
    expect(answer.success).toBe(true);
    const emails = await t.db.db.selectFrom('emails').select(['to_email', 'from_name']).where('project_id', '=', project.id).execute();
    expect(emails).toEqual([{ to_email: to, from_name: 'Hello Team' }]);
  });

  it('surfaces our error messages instead of "Unknown API Error"', async () => {
    const wrongKey = new Plunk(project.secret, { baseUrl: `${base}/v1` });
    await expect(wrongKey.events.track({ email: uniqueEmail(), event: 'e' })).rejects.toThrow(
      'This endpoint requires a public key (pk_…), not a secret key (sk_…)',
    );
    const plunk = new Plunk(project.secret, { baseUrl: `${base}/v1` });
    await expect(plunk.emails.send({ to: uniqueEmail(), subject: 'Hi', body: 'x', from: 'a@unverified.example' })).rejects.toThrow(/not verified/);
    await expect(plunk.emails.send({ to: uniqueEmail(), subject: 'Hi', body: 'x', from, type: 'markdown' })).rejects.toThrow('Request validation failed: type: Invalid input: expected "html"');
  });
});
