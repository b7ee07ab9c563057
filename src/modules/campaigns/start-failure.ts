import { type Kysely, sql } from 'kysely';
import { ZodError } from 'zod';
import type { CampaignStatusReason, Database } from '../../db/schema.js';
import { ApiError } from '../../http/errors.js';
import { AudienceUnusableError } from './audience.js';
import { isBillingLimitError } from '../billing/index.js';
import { cancelPendingCampaignEmails } from '../emails/index.js';
import { START_MAX_ATTEMPTS } from './fanout.js';
import { ACTIVE_STATUSES } from './state.js';

/**
 * A campaign whose send job cannot proceed ends CANCELLED with a reason (SPEC has no FAILED
 * campaign state), never SENDING forever (docs/campaigns.md "When sending cannot start"):
 * - a deterministic failure (the stored audience cannot be evaluated: a data exception such as
 *   an impossible date, a condition that no longer parses or compiles, a missing segment) ends
 *   it at the first attempt: retrying would fail the same way;
 * - anything else (connection lost, serialization failure, timeouts, unknown) is retried with
 *   graphile-worker's backoff, at most START_MAX_ATTEMPTS times (about a minute and a half in
 *   all), and the last attempt ends it.
 */

export interface StartFailure {
  /** Retrying cannot help: end the campaign now. */
  deterministic: boolean;
  code: Exclude<CampaignStatusReason, 'CANCELLED_BY_USER'>;
  /** For the API (GET /campaigns/:id statusReason.message): what happened and what to do. */
  message: string;
}

const FIX = 'Fix the audience, then duplicate the campaign and send the copy.';

/** A PostgreSQL error's SQLSTATE (5 characters), if `err` is one. */
function sqlState(err: unknown): string | undefined {
  const code = err instanceof Error ? (err as { code?: unknown }).code : undefined;
  return typeof code === 'string' && /^[0-9A-Z]{5}$/.test(code) ? code : undefined;
}

/**
 * SQLSTATE classes that fail the same way on every retry: 22 data exception (an impossible date,
 * a numeric overflow), 23 integrity constraint, 42 syntax or access rule (a compile error), 54
 * program limit (too many parameters, statement too complex), 2F/39 routine errors. Everything
 * else (08 connection, 40 serialization/deadlock, 53 resources, 55 lock, 57 shutdown or timeout,
 * XX internal) may pass on a later attempt.
 */
const DETERMINISTIC_CLASSES = new Set(['22', '23', '42', '54', '2F', '39']);

/** The first problem a validation error names, as `field: message` (the caller's own condition, so shown). */
function firstProblem(err: ZodError | ApiError): string | undefined {
  if (err instanceof ZodError) {
    const issue = err.issues[0];
    return issue ? `${issue.path.join('.') || 'condition'}: ${issue.message}` : undefined;
  }
  const first = err.errors?.[0];
  return first ? `${first.field}: ${first.message}` : err.message;
}

/** Which kind of failure `err` is, and the reason the campaign shows if it ends because of it. */
export function classifyStartFailure(err: unknown): StartFailure {
  const state = sqlState(err);
  const text = err instanceof Error ? err.message : String(err);
  if (isBillingLimitError(err)) return { deterministic: true, code: 'BILLING_LIMIT_REACHED', message: err.message };
  if (err instanceof AudienceUnusableError) return { deterministic: true, code: 'AUDIENCE_UNUSABLE', message: `${text}. ${FIX}` };
  if (err instanceof ZodError || (err instanceof ApiError && err.statusCode < 500)) {
    const why = firstProblem(err);
    return { deterministic: true, code: 'AUDIENCE_UNUSABLE', message: `The stored audience condition is no longer valid${why ? ` (${why})` : ''}. ${FIX}` };
  }
  if (state && DETERMINISTIC_CLASSES.has(state.slice(0, 2))) {
    // A data exception names the offending value, which is the caller's own data: shown. Other
    // classes describe the service's SQL: logged, not shown.
    const detail = state.startsWith('22') ? `: ${text} (SQLSTATE ${state})` : ` (SQLSTATE ${state})`;
    return { deterministic: true, code: 'AUDIENCE_UNUSABLE', message: `The audience could not be evaluated${detail}. ${FIX}` };
  }
  const cause = state ? `SQLSTATE ${state}` : 'see the service logs';
  return {
    deterministic: false,
    code: 'START_FAILED',
    message: `Sending could not start after ${START_MAX_ATTEMPTS} attempts (${cause}). Duplicate the campaign and send the copy.`,
  };
}

/**
 * SCHEDULED or SENDING → CANCELLED with the reason, in one transaction on the locked row, with
 * the same rule as a caller's cancel: every email not handed to the relay yet becomes CANCELLED.
 * False when the campaign is in another state (cancelled or finished meanwhile, deleted).
 */
export async function endCampaign(
  db: Kysely<Database>,
  campaignId: string,
  reason: { code: CampaignStatusReason; message: string },
): Promise<boolean> {
  return db.transaction().execute(async (trx) => {
    const row = await trx.selectFrom('campaigns').select('status').where('id', '=', campaignId).forUpdate().executeTakeFirst();
    if (!row || !ACTIVE_STATUSES.includes(row.status)) return false;
    await trx
      .updateTable('campaigns')
      .set({ status: 'CANCELLED', status_reason: reason.code, status_message: reason.message, cancelled_at: sql`now()`, updated_at: sql`now()` })
      .where('id', '=', campaignId)
      .execute();
    await cancelPendingCampaignEmails(trx, campaignId, `Not sent: the campaign was cancelled (${reason.code})`);
    return true;
  });
}

export type StartFailureOutcome = { kind: 'retry'; failure: StartFailure } | { kind: 'ended'; failure: StartFailure; changed: boolean };

/**
 * What the campaign-send job does with an error of attempt `attempt`: retry (a transient failure
 * with attempts left), or end the campaign CANCELLED with the reason. The attempt bound is the
 * smaller of the job's own and START_MAX_ATTEMPTS, so jobs queued with graphile-worker's default
 * of 25 attempts are bounded too.
 */
export async function handleStartFailure(
  db: Kysely<Database>,
  campaignId: string,
  err: unknown,
  job: { attempt: number; maxAttempts: number },
): Promise<StartFailureOutcome> {
  const failure = classifyStartFailure(err);
  const last = job.attempt >= Math.min(job.maxAttempts, START_MAX_ATTEMPTS);
  if (!failure.deterministic && !last) return { kind: 'retry', failure };
  const changed = await endCampaign(db, campaignId, failure);
  return { kind: 'ended', failure, changed };
}
