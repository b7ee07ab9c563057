import type { Kysely, Transaction } from 'kysely';
import type { BillingConfig } from '../../config.js';
import type { Database } from '../../db/schema.js';
import { ApiError } from '../../lib/errors.js';
import { addUsageWithinCaps, type Category, currentPeriod, readCapState, usageWouldFit } from './usage.repo.js';

export const BILLING_LIMIT_REACHED = 'BILLING_LIMIT_REACHED';

/** A send refused by a monthly cap (402): nothing of it was queued. */
export const isBillingLimitError = (err: unknown): err is ApiError => err instanceof ApiError && err.code === BILLING_LIMIT_REACHED;

export interface EmailCapInput {
  projectId: string;
  category: Category;
  /** Emails the caller is about to queue (deliverable ones: suppressed or cancelled rows are not counted). */
  count: number | (() => Promise<number>);
  /**
   * Only check (no count kept, no lock): a campaign's audience when it is sent or scheduled; its
   * emails are counted when they are materialised. Default false: count them in `db`'s transaction.
   */
  dryRun?: boolean;
}

/**
 * The one check of every send path (docs/billing.md "Caps"): with billing off (`billing`
 * undefined) nothing at all. Otherwise the emails are counted against the project's month in the
 * caller's transaction, under its caps: its own cap for the category (PUT billing-limits) and,
 * without a subscription, the free allowance shared by all categories. Over a cap it throws 402
 * BILLING_LIMIT_REACHED naming the cap and how to raise it, and counts nothing: the caller's
 * transaction, which queues the emails, rolls back.
 */
export async function enforceEmailCap(
  db: Transaction<Database> | Kysely<Database>,
  billing: BillingConfig | undefined,
  input: EmailCapInput,
): Promise<void> {
  if (!billing) return;
  const count = typeof input.count === 'number' ? input.count : await input.count();
  if (count <= 0) return;
  const period = currentPeriod();
  const change = { projectId: input.projectId, period: period.key, category: input.category, count, freePerMonth: billing.freeEmailsPerMonth };
  if (input.dryRun) {
    if (await usageWouldFit(db, change)) return;
  } else {
    if (!db.isTransaction) throw new Error('enforceEmailCap: counting needs the transaction that queues the emails');
    if (await addUsageWithinCaps(db as Transaction<Database>, change)) return;
  }
  throw await limitError(db, billing, input, count, period.key);
}

const n = (v: number) => v.toLocaleString('en-US');

async function limitError(db: Kysely<Database>, billing: BillingConfig, input: EmailCapInput, count: number, period: string): Promise<ApiError> {
  const state = await readCapState(db, input.projectId, period);
  const used = state.usage[input.category];
  const cap = state.caps[input.category];
  const where = `/users/@me/projects/${input.projectId}`;
  if (cap !== null && used + count > cap) {
    return new ApiError(402, BILLING_LIMIT_REACHED, `The project's monthly ${input.category} email cap of ${n(cap)} is reached (${n(used)} queued this month, this needs ${n(count)}): nothing was sent. A project OWNER can raise or remove it with PUT ${where}/billing-limits`, {
      details: { cap: input.category, limit: cap, usage: used, requested: count, periodStart: period },
    });
  }
  const total = state.usage.transactional + state.usage.campaign + state.usage.workflow;
  return new ApiError(402, BILLING_LIMIT_REACHED, `The free allowance of ${n(billing.freeEmailsPerMonth)} emails a month is used up (${n(total)} queued this month, this needs ${n(count)}): nothing was sent. A project OWNER can subscribe with POST ${where}/checkout`, {
    details: { cap: 'freeAllowance', limit: billing.freeEmailsPerMonth, usage: total, requested: count, periodStart: period },
  });
}

/**
 * The billing part of GET /projects/:id/setup-state (the security module's BillingStateReader):
 * off `{enabled: false}`; on, the plan and whether this month's free allowance is used up, in one
 * query.
 */
export function billingSetupStateReader(billing: BillingConfig | undefined) {
  return async (db: Kysely<Database>, projectId: string): Promise<{ enabled: boolean; plan?: 'free' | 'subscribed'; freeAllowanceUsedUp?: boolean }> => {
    if (!billing) return { enabled: false };
    const state = await readCapState(db, projectId, currentPeriod().key);
    const total = state.usage.transactional + state.usage.campaign + state.usage.workflow;
    return { enabled: true, plan: state.subscribed ? 'subscribed' : 'free', freeAllowanceUsedUp: !state.subscribed && total >= billing.freeEmailsPerMonth };
  };
}
