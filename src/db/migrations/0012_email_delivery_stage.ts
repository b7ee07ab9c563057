import { type Kysely, sql } from 'kysely';

/**
 * How far an SMTP attempt got (docs/sending.md "Exactly once"). `end_of_data_at`: set, and
 * committed, right before the message's final dot is written; cleared when an attempt starts. An
 * email found SENDING without it was never accepted by the relay and is sent again; with it, the
 * relay may have accepted it: it is not sent again but recorded SENT with `unconfirmed`, counted
 * apart from the sent ones. Emails left "Delivery unconfirmed" before this migration could not
 * tell the two apart: they stay unconfirmed.
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await sql`ALTER TABLE emails ADD COLUMN end_of_data_at timestamptz, ADD COLUMN unconfirmed boolean NOT NULL DEFAULT false`.execute(db);
  await sql`UPDATE emails SET unconfirmed = true WHERE status = 'SENT' AND error LIKE 'Delivery unconfirmed%'`.execute(db);
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await sql`ALTER TABLE emails DROP COLUMN end_of_data_at, DROP COLUMN unconfirmed`.execute(db);
}
