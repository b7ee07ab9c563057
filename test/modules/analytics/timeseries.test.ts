import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { bearer, newProject, type SignedInUser, type TestProject } from '../../helpers/accounts.js';
import { createTestApp, type TestApp } from '../../helpers/app.js';
import { expectEnvelope } from '../../helpers/envelope.js';
import { getWithKey, ok, seedEmails } from './helpers.js';

let t: TestApp;
beforeAll(async () => {
  t = await createTestApp();
});
afterAll(() => t.close());

interface Point {
  date: string;
  sent: number;
  delivered: number;
  opened: number;
  clicked: number;
  bounced: number;
  complained: number;
}
interface Series {
  startDate: string;
  endDate: string;
  tz: string;
  interval: string;
  data: Point[];
}

async function project(): Promise<{ user: SignedInUser; project: TestProject }> {
  return newProject(t.app);
}

const series = (p: TestProject, query: string) => ok<Series>(t, p.secret, `/analytics/timeseries?${query}`);
/** Points with any count, as `date → sent`. */
const sentBy = (s: Series) => Object.fromEntries(s.data.filter((d) => d.sent > 0).map((d) => [d.date, d.sent]));

describe('GET /analytics/timeseries', () => {
  it('answers one zero-filled point per day with every milestone counted at its own time', async () => {
    const { project: p } = await project();
    await seedEmails(t.db, p.id, [
      { sent: '2025-06-03T10:00:00Z', delivered: '2025-06-03T10:00:05Z', opened: '2025-06-04T08:00:00Z', clicked: '2025-06-04T08:01:00Z' },
      { sent: '2025-06-03T11:00:00Z', bounced: '2025-06-03T11:00:10Z' },
      { sent: '2025-06-05T23:59:00Z', complained: '2025-06-06T00:30:00Z' },
      { sent: '2025-05-31T23:59:59Z' }, // before the range
    ]);
    const s = await series(p, 'startDate=2025-06-01&endDate=2025-06-07');
    expect(s).toMatchObject({ interval: 'day', tz: 'UTC', startDate: '2025-06-01T00:00:00.000Z', endDate: '2025-06-08T00:00:00.000Z' });
    expect(s.data.map((d) => d.date)).toEqual(['2025-06-01', '2025-06-02', '2025-06-03', '2025-06-04', '2025-06-05', '2025-06-06', '2025-06-07']);
    const zero = { sent: 0, delivered: 0, opened: 0, clicked: 0, bounced: 0, complained: 0 };
    expect(s.data).toEqual([
      { date: '2025-06-01', ...zero },
      { date: '2025-06-02', ...zero },
      { date: '2025-06-03', ...zero, sent: 2, delivered: 1, bounced: 1 },
      { date: '2025-06-04', ...zero, opened: 1, clicked: 1 },
      { date: '2025-06-05', ...zero, sent: 1 },
      { date: '2025-06-06', ...zero, complained: 1 },
      { date: '2025-06-07', ...zero },
    ]);
  });

  it('fills a year of hours (366 days, 8,784 points) and accepts exactly 366 days', async () => {
    const { project: p } = await project();
    await seedEmails(t.db, p.id, [{ sent: '2024-03-01T12:34:00Z' }]);
    const s = await series(p, 'startDate=2024-01-01&endDate=2024-12-31&interval=hour');
    expect(s.data).toHaveLength(366 * 24);
    expect(s.data[0]?.date).toBe('2024-01-01T00:00:00.000Z');
    expect(s.data.at(-1)?.date).toBe('2024-12-31T23:00:00.000Z');
    expect(sentBy(s)).toEqual({ '2024-03-01T12:00:00.000Z': 1 });
  });

  it('Europe/Berlin, end of summer time: the day has 25 hours and 02:00–03:00 twice', async () => {
    const { project: p } = await project();
    await seedEmails(t.db, p.id, [
      { sent: '2025-10-25T21:59:00Z' }, // Oct 25, 23:59 CEST
      { sent: '2025-10-25T22:30:00Z' }, // Oct 26, 00:30 CEST
      { sent: '2025-10-26T00:30:00Z' }, // 02:30 CEST (first 02:xx)
      { sent: '2025-10-26T01:30:00Z' }, // 02:30 CET (second 02:xx)
      { sent: '2025-10-26T22:30:00Z' }, // Oct 26, 23:30 CET
      { sent: '2025-10-26T23:30:00Z' }, // Oct 27, 00:30 CET
    ]);
    const days = await series(p, 'startDate=2025-10-25&endDate=2025-10-27&tz=Europe/Berlin');
    expect(days.startDate).toBe('2025-10-24T22:00:00.000Z');
    expect(days.endDate).toBe('2025-10-27T23:00:00.000Z');
    expect(sentBy(days)).toEqual({ '2025-10-25': 1, '2025-10-26': 4, '2025-10-27': 1 });
    // The same emails by UTC day.
    expect(sentBy(await series(p, 'startDate=2025-10-25&endDate=2025-10-27'))).toEqual({ '2025-10-25': 2, '2025-10-26': 4 });

    const hours = await series(p, 'startDate=2025-10-26&endDate=2025-10-26&tz=Europe/Berlin&interval=hour');
    expect(hours.data).toHaveLength(25);
    expect(hours.data[0]?.date).toBe('2025-10-25T22:00:00.000Z');
    expect(hours.data.at(-1)?.date).toBe('2025-10-26T22:00:00.000Z');
    expect(hours.data.map((d) => d.date)).toContain('2025-10-26T00:00:00.000Z');
    expect(hours.data.map((d) => d.date)).toContain('2025-10-26T01:00:00.000Z');
    expect(sentBy(hours)).toEqual({
      '2025-10-25T22:00:00.000Z': 1,
      '2025-10-26T00:00:00.000Z': 1,
      '2025-10-26T01:00:00.000Z': 1,
      '2025-10-26T22:00:00.000Z': 1,
    });
  });

  it('Europe/Berlin, start of summer time: the day has 23 hours', async () => {
    const { project: p } = await project();
    await seedEmails(t.db, p.id, [{ sent: '2025-03-30T00:59:00Z' }, { sent: '2025-03-30T01:00:00Z' }, { sent: '2025-03-30T21:59:00Z' }]);
    const hours = await series(p, 'startDate=2025-03-30&endDate=2025-03-30&tz=Europe/Berlin&interval=hour');
    expect(hours.data).toHaveLength(23);
    expect(hours.data[0]?.date).toBe('2025-03-29T23:00:00.000Z');
    expect(hours.data[1]?.date).toBe('2025-03-30T00:00:00.000Z'); // 01:00 CET
    expect(hours.data[2]?.date).toBe('2025-03-30T01:00:00.000Z'); // 03:00 CEST (02:00 does not exist)
    expect(sentBy(hours)).toEqual({ '2025-03-30T00:00:00.000Z': 1, '2025-03-30T01:00:00.000Z': 1, '2025-03-30T21:00:00.000Z': 1 });
    const days = await series(p, 'startDate=2025-03-30&endDate=2025-03-31&tz=Europe/Berlin');
    expect(sentBy(days)).toEqual({ '2025-03-30': 3 });
  });

  it('America/New_York across both changes of 2025', async () => {
    const { project: p } = await project();
    await seedEmails(t.db, p.id, [
      { sent: '2025-03-09T06:30:00Z' }, // 01:30 EST
      { sent: '2025-03-09T07:30:00Z' }, // 03:30 EDT
      { sent: '2025-11-02T05:30:00Z' }, // 01:30 EDT
      { sent: '2025-11-02T06:30:00Z' }, // 01:30 EST
      { sent: '2025-11-03T04:59:00Z' }, // Nov 2, 23:59 EST
    ]);
    const march = await series(p, 'startDate=2025-03-09&endDate=2025-03-09&tz=America/New_York&interval=hour');
    expect(march.data).toHaveLength(23);
    expect(march.data[0]?.date).toBe('2025-03-09T05:00:00.000Z');
    expect(sentBy(march)).toEqual({ '2025-03-09T06:00:00.000Z': 1, '2025-03-09T07:00:00.000Z': 1 });
    const november = await series(p, 'startDate=2025-11-02&endDate=2025-11-02&tz=America/New_York&interval=hour');
    expect(november.data).toHaveLength(25);
    expect(november.data[0]?.date).toBe('2025-11-02T04:00:00.000Z');
    expect(sentBy(november)).toEqual({ '2025-11-02T05:00:00.000Z': 1, '2025-11-02T06:00:00.000Z': 1, '2025-11-03T04:00:00.000Z': 1 });
    const days = await series(p, 'startDate=2025-11-01&endDate=2025-11-03&tz=America/New_York');
    expect(sentBy(days)).toEqual({ '2025-11-02': 3 });
  });

  it('Asia/Kolkata (+05:30) and Asia/Kathmandu (+05:45): local hours and days start off the UTC hour', async () => {
    const { project: p } = await project();
    await seedEmails(t.db, p.id, [
      { sent: '2025-05-31T18:10:00Z' }, // Kolkata May 31 23:40, Kathmandu May 31 23:55
      { sent: '2025-05-31T18:20:00Z' }, // Kolkata 23:50 (May 31), Kathmandu 00:05 (Jun 1)
      { sent: '2025-05-31T18:40:00Z' }, // Kolkata Jun 1 00:10, Kathmandu 00:25
      { sent: '2025-06-01T05:29:00Z' }, // Kolkata 10:59, Kathmandu 11:14
      { sent: '2025-06-01T05:31:00Z' }, // Kolkata 11:01, Kathmandu 11:16
    ]);
    const kolkata = await series(p, 'startDate=2025-06-01&endDate=2025-06-01&tz=Asia/Kolkata&interval=hour');
    expect(kolkata.data).toHaveLength(24);
    expect(kolkata.data[0]?.date).toBe('2025-05-31T18:30:00.000Z');
    expect(sentBy(kolkata)).toEqual({ '2025-05-31T18:30:00.000Z': 1, '2025-06-01T04:30:00.000Z': 1, '2025-06-01T05:30:00.000Z': 1 });
    expect(sentBy(await series(p, 'startDate=2025-05-31&endDate=2025-06-01&tz=Asia/Kolkata'))).toEqual({ '2025-05-31': 2, '2025-06-01': 3 });

    const kathmandu = await series(p, 'startDate=2025-06-01&endDate=2025-06-01&tz=Asia/Kathmandu&interval=hour');
    expect(kathmandu.data).toHaveLength(24);
    expect(kathmandu.data[0]?.date).toBe('2025-05-31T18:15:00.000Z');
    expect(sentBy(kathmandu)).toEqual({ '2025-05-31T18:15:00.000Z': 2, '2025-06-01T05:15:00.000Z': 2 });
    expect(sentBy(await series(p, 'startDate=2025-05-31&endDate=2025-06-01&tz=Asia/Kathmandu'))).toEqual({ '2025-05-31': 1, '2025-06-01': 4 });
  });

  it('date-times: the points touching [startDate, endDate) are whole', async () => {
    const { project: p } = await project();
    await seedEmails(t.db, p.id, [{ sent: '2025-06-01T10:05:00Z' }, { sent: '2025-06-01T12:50:00Z' }, { sent: '2025-06-01T13:00:00Z' }]);
    const s = await series(p, 'startDate=2025-06-01T10:20:00Z&endDate=2025-06-01T13:00:00Z&interval=hour');
    expect(s.data.map((d) => d.date)).toEqual(['2025-06-01T10:00:00.000Z', '2025-06-01T11:00:00.000Z', '2025-06-01T12:00:00.000Z']);
    expect(sentBy(s)).toEqual({ '2025-06-01T10:00:00.000Z': 1, '2025-06-01T12:00:00.000Z': 1 });
  });

  it('defaults: the last 30 local days up to today, or the last 24 local hours', async () => {
    const { project: p } = await project();
    await seedEmails(t.db, p.id, [{ sent: new Date() }]);
    const days = await series(p, '');
    expect(days.data).toHaveLength(30);
    expect(days.data.at(-1)).toMatchObject({ date: new Date().toISOString().slice(0, 10), sent: 1 });
    const hours = await series(p, 'interval=hour&tz=Asia/Kolkata');
    expect(hours.data).toHaveLength(24);
    expect(hours.data.at(-1)?.sent).toBe(1);
    expect(new Date(hours.data.at(-1)?.date ?? '').getUTCMinutes()).toBe(30);
  });

  it('refuses bad ranges, zones and values with 422', async () => {
    const { project: p } = await project();
    const refused = async (query: string, field: string) => {
      const error = expectEnvelope(await getWithKey(t, p.secret, `/analytics/timeseries?${query}`), 422, 'VALIDATION_ERROR');
      expect(error.errors?.map((e: { field: string }) => e.field)).toContain(field);
    };
    await refused('startDate=2025-01-01&endDate=2026-01-02', 'endDate'); // 367 days
    await refused('startDate=2025-01-01T00:00:00Z&endDate=2026-01-03T00:00:00Z', 'endDate');
    await refused('startDate=2025-06-02&endDate=2025-06-01', 'endDate');
    await refused('startDate=2025-06-01T10:00:00Z&endDate=2025-06-01T10:00:00Z', 'endDate');
    await refused('tz=Mars/Olympus_Mons', 'tz');
    await refused('tz=UTC%2B5', 'tz');
    await refused('startDate=2025-02-30', 'startDate');
    await refused('startDate=yesterday', 'startDate');
    await refused('endDate=2025-06-01T10:00:00', 'endDate'); // no zone
    await refused('interval=week', 'interval');
    expect((await getWithKey(t, p.secret, '/analytics/timeseries?startDate=2025-01-01&endDate=2025-12-31&tz=Europe/Berlin')).statusCode).toBe(200);
  });

  it('counts only the project\'s own emails; needs the secret key or a member\'s session', async () => {
    const { user, project: p } = await project();
    const { project: other } = await project();
    await seedEmails(t.db, other.id, [{ sent: '2025-06-03T10:00:00Z' }]);
    expect(sentBy(await series(p, 'startDate=2025-06-01&endDate=2025-06-07'))).toEqual({});
    expect(sentBy(await series(other, 'startDate=2025-06-01&endDate=2025-06-07'))).toEqual({ '2025-06-03': 1 });

    const url = '/analytics/timeseries?startDate=2025-06-01&endDate=2025-06-07';
    expectEnvelope(await t.app.inject({ method: 'GET', url, headers: bearer(p.public) }), 401, 'INVALID_API_KEY');
    expect((await t.app.inject({ method: 'GET', url })).statusCode).toBe(401);
    const session = await t.app.inject({ method: 'GET', url, headers: { cookie: user.cookie, 'x-project-id': p.id } });
    expect(session.statusCode, session.body).toBe(200);
    const foreign = await t.app.inject({ method: 'GET', url, headers: { cookie: user.cookie, 'x-project-id': other.id } });
    expect(foreign.statusCode).toBeGreaterThanOrEqual(403);
  });
});
