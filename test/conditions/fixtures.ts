import { randomUUID } from 'node:crypto';
import { sql } from 'kysely';
import type { Db } from '../../src/db/connection.js';
import type { ContactData } from '../../src/db/schema.js';

export interface Person {
  local: string;
  data?: ContactData;
  subscribed?: boolean;
  /** Days ago the contact was created (default 0). */
  createdDaysAgo?: number;
  /** Event name -> days ago of each occurrence. */
  events?: Record<string, number[]>;
  /** Email milestone columns set, and how many days ago. */
  emails?: Partial<Record<'sent_at' | 'delivered_at' | 'opened_at' | 'clicked_at' | 'bounced_at' | 'complained_at', number>>[];
}

/**
 * A known population: missing keys, numbers vs numeric strings, case differences, dates, events
 * at known ages, email milestones. Local parts name the contacts in assertions.
 */
export const PEOPLE: Person[] = [
  { local: 'alice', data: { plan: 'pro', age: 30, score: '42', city: 'Berlin', signup: '2024-01-15T00:00:00Z' }, events: { purchase: [0], login: [40] }, emails: [{ sent_at: 1, opened_at: 0 }] },
  { local: 'bob', subscribed: false, data: { plan: 'free', age: '25', city: 'berlin' }, events: { purchase: [10] } },
  { local: 'carol', data: { plan: 'PRO', age: 42.5, vip: true }, emails: [{ sent_at: 3, bounced_at: 2 }] },
  { local: 'dave', createdDaysAgo: 100, data: {} },
  { local: 'eve', data: { age: 'abc', score: 42, signup: 'not a date' }, events: { login: [0, 1] } },
  { local: 'frank', data: { vip: 'true', signup: '2025-06-01' }, emails: [{ sent_at: 20 }] },
  { local: 'grace', data: { city: 'Paris', age: 18 }, createdDaysAgo: 5, events: { purchase: [60] } },
  { local: 'heidi', data: { nickname: "'; DROP TABLE contacts; --" } },
  { local: 'ivan', subscribed: false, data: { plan: 'pro', age: '30' }, events: { 'Signed Up': [2] } },
  { local: 'judy', data: { age: -5, score: '42.0' }, createdDaysAgo: 1 },
  { local: 'ken', data: { plan: 'enterprise', city: 'BERLIN-Mitte' }, emails: [{ sent_at: 0, clicked_at: 0, delivered_at: 0 }] },
  { local: 'liz', data: { flag: false } },
];

export const emailOf = (local: string, domain: string) => `${local}@${domain}`;

/** Inserts the population into the project; answers local part -> contact id. */
export async function seedPeople(db: Db, projectId: string, domain = `${randomUUID().slice(0, 8)}.example`): Promise<Map<string, string>> {
  const ids = new Map<string, string>();
  for (const p of PEOPLE) {
    const row = await db.db
      .insertInto('contacts')
      .values({
        project_id: projectId,
        email: emailOf(p.local, domain),
        subscribed: p.subscribed ?? true,
        data: JSON.stringify(p.data ?? {}),
        created_at: sql`now() - ${p.createdDaysAgo ?? 0} * interval '1 day'`,
        updated_at: sql`now() - ${p.createdDaysAgo ?? 0} * interval '1 day'`,
      })
      .returning('id')
      .executeTakeFirstOrThrow();
    ids.set(p.local, row.id);
    for (const [name, ages] of Object.entries(p.events ?? {})) {
      for (const age of ages) {
        await sql`INSERT INTO events (project_id, contact_id, name, created_at)
          VALUES (${projectId}::uuid, ${row.id}::uuid, ${name}, now() - ${age} * interval '1 day' - interval '1 minute')`.execute(db.db);
      }
    }
    for (const e of p.emails ?? []) {
      const cols = Object.keys(e);
      const sets = cols.map((c) => sql`now() - ${e[c as keyof typeof e] ?? 0} * interval '1 day' - interval '1 minute'`);
      await sql`INSERT INTO emails (project_id, contact_id, source, type, to_email, from_email, subject, html, message_id, ${sql.join(cols.map((c) => sql.ref(c)))})
        VALUES (${projectId}::uuid, ${row.id}::uuid, 'SEND', 'TRANSACTIONAL', 'x@y.z', 'a@b.c', 's', 'h', ${randomUUID()}, ${sql.join(sets)})`.execute(db.db);
    }
  }
  return ids;
}
