import { type Kysely, sql, type Transaction } from 'kysely';
import type { Database } from '../../db/schema.js';
import { ApiError } from '../../http/errors.js';

/**
 * A project sends (POST /v1/send, campaign send/schedule, workflow SEND_EMAIL steps) only when at
 * least one of its OWNERs has a verified email address (docs/accounts.md "Verified owners send").
 * Every send path calls {@link assertProjectCanSend} before it queues anything.
 */

export const EMAIL_NOT_VERIFIED = 'EMAIL_NOT_VERIFIED';

export const emailNotVerified = () =>
  new ApiError(403, EMAIL_NOT_VERIFIED, 'This project cannot send email until one of its owners verifies their email address', {
    suggestion: 'Sign in as an owner and open the link emailed at sign-up; POST /auth/request-verification sends a new one',
  });

/** A project found able to send stays so for this long in this process (an owner's verification is not undone). */
const CACHE_MS = 30_000;
const MAX_CACHED = 10_000;
const canSendUntil = new Map<string, number>();

/** True when one of the project's OWNERs has a verified email (one indexed query; positive answers cached for 30 s). */
export async function projectHasVerifiedOwner(db: Kysely<Database> | Transaction<Database>, projectId: string): Promise<boolean> {
  const until = canSendUntil.get(projectId);
  if (until !== undefined && until > Date.now()) return true;
  const { rows } = await sql<{ ok: boolean }>`
    SELECT EXISTS (
      SELECT 1 FROM memberships m JOIN users u ON u.id = m.user_id
      WHERE m.project_id = ${projectId}::uuid AND m.role = 'OWNER' AND u.email_verified_at IS NOT NULL
    ) AS ok`.execute(db);
  const ok = rows[0]?.ok ?? false;
  if (ok) {
    if (canSendUntil.size >= MAX_CACHED) canSendUntil.clear();
    canSendUntil.set(projectId, Date.now() + CACHE_MS);
  }
  return ok;
}

/** 403 EMAIL_NOT_VERIFIED unless one of the project's OWNERs has a verified email. */
export async function assertProjectCanSend(db: Kysely<Database> | Transaction<Database>, projectId: string): Promise<void> {
  if (!(await projectHasVerifiedOwner(db, projectId))) throw emailNotVerified();
}
