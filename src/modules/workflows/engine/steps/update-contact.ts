import { sql } from 'kysely';
import type { DataValue } from '../../../../db/schema.js';
import { ContactDataInput, isRefused, resolveData, upsertContactsChecked } from '../../../contacts/index.js';
import { UpdateContactConfig } from '../../steps.schema.js';
import { emptyResults, type StepHandler } from '../types.js';

/**
 * UPDATE_CONTACT: the contacts' data patched (null deletes a key) and/or their subscription set,
 * through the contacts module's set-based upsert with the same data rules and limits as
 * /v1/track. A subscription change records contact.subscribed/unsubscribed through the contacts
 * trigger, in this transaction (and so may enrol the contact in other workflows). A contact whose
 * data would break a limit is left as it was and its step FAILS.
 */
export const updateContact: StepHandler = async (ctx, rows) => {
  const results = emptyResults();
  const first = rows[0];
  if (!first) return results;
  const config = UpdateContactConfig.parse(first.config);
  const data = ContactDataInput.safeParse(config.updates ?? {});
  if (!data.success) {
    const message = `updates: ${data.error.issues.map((i) => i.message).join('; ')}`;
    return { ...results, failed: rows.map((row) => ({ row, error: message })) };
  }
  const patch: Record<string, DataValue | null> = resolveData(data.data).patch;
  // The current address of each contact, locked: the upsert is by email.
  const { rows: contacts } = await sql<{ id: string; email: string }>`
    SELECT id, email FROM contacts WHERE project_id = ${ctx.projectId}::uuid AND id = ANY(${rows.map((r) => r.contactId)}::uuid[])
    ORDER BY id FOR UPDATE`.execute(ctx.trx);
  const emailOf = new Map(contacts.map((c) => [c.id, c.email]));
  const live = rows.filter((r) => emailOf.has(r.contactId));
  const outcomes = await upsertContactsChecked(
    ctx.trx,
    ctx.projectId,
    live.map((r) => ({ email: emailOf.get(r.contactId) ?? r.email, patch, subscribed: config.subscribed, subscribedIfNew: config.subscribed ?? true })),
    { withData: false },
  );
  live.forEach((row, i) => {
    const outcome = outcomes[i];
    if (!outcome) results.failed.push({ row, error: 'contact not updated' });
    else if (isRefused(outcome)) results.failed.push({ row, error: `contact data limit: ${outcome.refused}` });
    else results.done.push({ row, branch: null, output: { changed: outcome.changed, subscribed: outcome.row.subscribed } });
  });
  return results;
};
