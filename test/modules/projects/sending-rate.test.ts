import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { effectiveRate } from '../../../src/modules/emails/delivery/throttle.js';
import { newProject, signUp } from '../../helpers/accounts.js';
import { cleanupServers } from '../../helpers/process.js';
import { type SmtpSink, startSmtpSink } from '../../helpers/smtp-sink.js';
import { startReadyWorker } from '../campaigns/worker-process.js';
import { addVerifiedDomain, createSendTestApp, send, type SendAnswer, type SendTestApp, waitForStatus } from '../emails/helpers.js';

/**
 * PATCH /users/@me/projects/:id `sendingRate`, the operator's cap, and the rate held across
 * worker processes (docs/projects.md "Sending rate"). The API runs in this process and runs no
 * jobs; two `ROLE=worker` children deliver to a loopback SMTP sink.
 */

const CAP = 50;
let sink: SmtpSink;
let t: SendTestApp;

beforeAll(async () => {
  sink = await startSmtpSink({ keepRaw: false });
  t = await createSendTestApp({ env: { SMTP_URL: sink.url, MAX_PROJECT_SENDING_RATE: String(CAP) } });
});
afterAll(async () => {
  await cleanupServers({ removeTemp: true });
  await t?.close();
  await sink?.close();
});

const patch = (cookie: string, id: string, payload: object) =>
  t.app.inject({ method: 'PATCH', url: `/users/@me/projects/${id}`, headers: { cookie }, payload });

describe('effectiveRate', () => {
  it('is the project\'s rate, else the default, never above the cap; undefined (unlimited) without any', () => {
    expect(effectiveRate(null, {})).toBeUndefined();
    expect(effectiveRate(7, {})).toBe(7);
    expect(effectiveRate(null, { default: 3 })).toBe(3);
    expect(effectiveRate(1, { default: 3 })).toBe(1);
    expect(effectiveRate(5, { default: 3, max: 2 })).toBe(2);
    expect(effectiveRate(null, { max: 4 })).toBe(4);
  });
});

describe('PATCH sendingRate', () => {
  it('sets, reads and clears the rate; refuses bad values and rates over the cap with 422 naming sendingRate, changing nothing', async () => {
    const { user, project } = await newProject(t.app);
    expect((await t.app.inject({ method: 'GET', url: `/users/@me/projects/${project.id}`, headers: { cookie: user.cookie } })).json().sendingRate).toBeNull();
    const set = await patch(user.cookie, project.id, { sendingRate: 2.5 });
    expect(set.statusCode, set.body).toBe(200);
    expect(set.json()).toMatchObject({ sendingRate: 2.5, name: 'Test project' });
    for (const sendingRate of [0, -1, 'fast', CAP + 1]) {
      const bad = await patch(user.cookie, project.id, { sendingRate, name: 'Changed' });
      expect(bad.statusCode, String(sendingRate)).toBe(422);
      expect(bad.json().error.errors[0].field).toBe('sendingRate');
    }
    const row = await t.db.db.selectFrom('projects').select(['sending_rate', 'name']).where('id', '=', project.id).executeTakeFirstOrThrow();
    expect(row).toEqual({ sending_rate: 2.5, name: 'Test project' });
    const cleared = await patch(user.cookie, project.id, { sendingRate: null });
    expect(cleared.json().sendingRate).toBeNull();
    expect(await t.db.db.selectFrom('projects').select('sending_rate').where('id', '=', project.id).executeTakeFirstOrThrow()).toEqual({ sending_rate: null });
  });

  it('GET /config tells the cap', async () => {
    expect((await t.app.inject({ method: 'GET', url: '/config' })).json()).toMatchObject({ maxProjectSendingRate: CAP });
  });

  it('is refused to a MEMBER (403)', async () => {
    const { project } = await newProject(t.app);
    const member = await signUp(t.app);
    await t.db.db.insertInto('memberships').values({ project_id: project.id, user_id: member.id, role: 'MEMBER' }).execute();
    expect((await patch(member.cookie, project.id, { sendingRate: 1 })).statusCode).toBe(403);
  });
});

describe('the rate across worker processes', () => {
  // Each worker delivers to its own sink: both sinks receiving mail shows both processes sent.
  let second: SmtpSink;
  beforeAll(async () => {
    second = await startSmtpSink({ keepRaw: false });
    await Promise.all([startReadyWorker(t, sink.url), startReadyWorker(t, second.url)]);
  }, 60_000);
  afterAll(() => second?.close());

  it('two workers together stay within the project rate: a burst of one second, then the steady pace; every email once', async () => {
    const RATE = 10;
    // Enough that both workers take many: past the burst, each email is throttled into a send-email
    // job of its own, which either worker may fetch.
    const N = 100;
    const { user, project } = await newProject(t.app);
    expect((await patch(user.cookie, project.id, { sendingRate: RATE })).statusCode).toBe(200);
    const from = `a@${(await addVerifiedDomain(t, project.id)).domain}`;
    const to = Array.from({ length: N }, (_, i) => `rate${i}-${project.id}@example.com`);
    const ids: string[] = [];
    for (const batch of [to.slice(0, 50), to.slice(50)]) {
      const res = await send(t.app, project, { to: batch, from, subject: 's', body: 'b' });
      expect(res.statusCode, res.body).toBe(200);
      ids.push(...res.json<SendAnswer>().data.emails.map((e) => e.email));
    }
    await waitForStatus(t.db, ids, ['SENT'], 40_000);

    const ours = (s: SmtpSink) => s.messages.filter((m) => m.to[0]?.endsWith(`-${project.id}@example.com`));
    const mine = [...ours(sink), ...ours(second)];
    expect(mine).toHaveLength(N);
    const times = mine.map((m) => m.receivedAt.getTime()).sort((a, b) => a - b);
    // GCRA with a one-second burst: the slots of any k emails span at least (k - RATE) / RATE s.
    // A job waiting for its slot is picked up at the worker's next poll (up to 1 s late), so
    // arrivals may clump by up to one more second's worth (docs/projects.md "Sending rate").
    // Each worker throttling on its own would allow twice the rate: all 100 within about 5 s. The
    // slots span 9 s; the first arrivals can be late by the first connection and key load (7.96 s
    // seen on a slow machine), so the bound keeps 1.5 s of slack, still far from 5 s.
    expect(((times.at(-1) ?? 0) - (times[0] ?? 0)) / 1000).toBeGreaterThanOrEqual((N - RATE) / RATE - 1.5);
    for (let i = 0; i < N; i++) {
      for (let j = i; j < N; j++) {
        const span = ((times[j] ?? 0) - (times[i] ?? 0)) / 1000;
        expect(j - i + 1, `${j - i + 1} emails within ${span} s`).toBeLessThanOrEqual(RATE * span + 2 * RATE);
      }
    }
    // Both processes delivered (else the test would prove nothing about sharing).
    expect(ours(sink).length).toBeGreaterThan(0);
    expect(ours(second).length).toBeGreaterThan(0);
  }, 60_000);
});
