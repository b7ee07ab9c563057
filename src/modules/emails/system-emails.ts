import { type Kysely, sql, type Transaction } from 'kysely';
import { type Database, INSTANCE_PROJECT_ID } from '../../db/schema.js';
import { JobPriority, Tasks } from '../../jobs/queue.js';
import { messageIdFor } from '../../mail/address.js';
import { escapeHtml } from '../../mail/render.js';
import { uuidV7 } from '../../lib/uuid.js';
import { SEND_MAX_ATTEMPTS } from './emails.repo.js';

/**
 * The instance's own account mail (docs/accounts.md "Account emails"): verification, password
 * reset, invitations, project notices. Stored as SYSTEM rows of `emails` of no project (INSTANCE_PROJECT_ID) and
 * delivered by the same send-email job as every other email (exactly once, retries, DKIM when
 * SYSTEM_FROM's domain is verified, the capture outbox without SMTP_URL), ahead of all other
 * mail (`JobPriority.system`).
 */

export type SystemEmailKind = 'verify-email' | 'password-reset' | 'invitation' | 'project-disabled' | (string & {});

export interface SystemEmail {
  to: string;
  subject: string;
  /** The text part, sent as written. */
  text: string;
  /** The HTML part; default: the text, escaped, in paragraphs. */
  html?: string;
  kind: SystemEmailKind;
  /** The project the email is about, if any (recorded on the row; the email is still no project's). */
  projectId?: string | null;
}

let sender: { from: string } | undefined;

/** Sets SYSTEM_FROM (config.systemFrom) for this process: `createAppDeps` calls it. */
export function configureSystemEmail(opts: { from: string }): void {
  sender = { from: opts.from };
}

const LINE_BREAKS = /[\r\n]/;

/** The text as simple HTML: escaped, blank lines between paragraphs, single newlines as <br>. */
export function textToHtml(text: string): string {
  const paragraphs = text
    .trim()
    .split(/\n\s*\n/)
    .map((p) => `<p>${escapeHtml(p.trim()).replace(/\n/g, '<br>\n')}</p>`);
  return `<!doctype html><html><body style="font-family:sans-serif;line-height:1.5">\n${paragraphs.join('\n')}\n</body></html>`;
}

/**
 * Stores one account email and enqueues its delivery in ONE statement, so it commits (or not)
 * with the caller's transaction (or on its own when given the database). Returns the email's id.
 */
export async function queueSystemEmail(trx: Transaction<Database> | Kysely<Database>, mail: SystemEmail): Promise<{ id: string }> {
  if (!sender) throw new Error('queueSystemEmail: the system sender is not configured (configureSystemEmail)');
  if (!/^[^@\s]+@[^@\s]+$/.test(mail.to)) throw new Error('queueSystemEmail: `to` must be one address');
  if (LINE_BREAKS.test(mail.subject) || mail.subject.trim() === '') throw new Error('queueSystemEmail: `subject` must be one non-empty line');
  if (mail.kind.trim() === '') throw new Error('queueSystemEmail: `kind` is required');
  const id = uuidV7();
  const from = sender.from;
  await sql`
    WITH email AS (
      INSERT INTO emails (id, project_id, source, system_kind, system_project_id, type, to_email, from_email, subject, html, text, status, message_id)
      VALUES (${id}, ${INSTANCE_PROJECT_ID}::uuid, 'SYSTEM', ${mail.kind}, ${mail.projectId ?? null}, 'TRANSACTIONAL', ${mail.to}, ${from}, ${mail.subject},
              ${mail.html ?? textToHtml(mail.text)}, ${mail.text}, 'PENDING', ${messageIdFor(id, from)})
      RETURNING id
    )
    SELECT graphile_worker.add_job(${Tasks.sendEmail}::text, json_build_object('emailId', email.id), job_key => email.id::text,
                                   priority => ${JobPriority.system}::int, max_attempts => ${SEND_MAX_ATTEMPTS}::int)
    FROM email`.execute(trx);
  return { id };
}
