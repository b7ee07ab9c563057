import { parse } from 'csv-parse/sync';
import type { Kysely } from 'kysely';
import type { Database } from '../../../src/db/schema.js';

export interface SeedContact {
  email: string;
  subscribed?: boolean;
  /** An object, or raw JSON text (numbers beyond a double's precision). */
  data?: Record<string, unknown> | string;
  /** ISO time; default: in seeding order, one millisecond apart from 2026-01-01. */
  createdAt?: string;
}

/** Inserts contacts as stored rows (any data, as older rows may hold), in one statement. */
export async function seedContacts(db: Kysely<Database>, projectId: string, contacts: readonly SeedContact[]): Promise<void> {
  if (contacts.length === 0) return;
  const base = Date.parse('2026-01-01T00:00:00Z');
  await db
    .insertInto('contacts')
    .values(
      contacts.map((c, i) => ({
        project_id: projectId,
        email: c.email,
        subscribed: c.subscribed ?? true,
        data: typeof c.data === 'string' ? c.data : JSON.stringify(c.data ?? {}),
        created_at: c.createdAt ?? new Date(base + i).toISOString(),
      })),
    )
    .execute();
}

/** The records of an exported CSV file (byte order mark and CRLF as the export writes them). */
export const readCsv = (text: string): string[][] => parse(text, { bom: true, record_delimiter: '\r\n' });

/** The objects of an NDJSON file. */
export const readNdjson = (text: string): Record<string, unknown>[] =>
  text
    .split('\n')
    .filter((l) => l !== '')
    .map((l) => JSON.parse(l) as Record<string, unknown>);
