import { type Kysely, sql, type Transaction } from 'kysely';
import type { Database } from '../../db/schema.js';

type Db = Kysely<Database> | Transaction<Database>;

/** The three capped kinds of email, named like billing_usage's and project_billing's columns. */
export const CATEGORIES = ['transactional', 'campaign', 'workflow'] as const;
export type Category = (typeof CATEGORIES)[number];

/** Stripe subscription statuses that lift the free allowance (past_due: Stripe is still retrying). */
export const SUBSCRIBED_STATUSES = ['active', 'trialing', 'past_due'] as const;

/** The billing period of the caps: the UTC calendar month of `now`. */
export function currentPeriod(now = new Date()): { start: Date; end: Date; key: string } {
  const start = new Date(Date.UTC(now.getUTCFullYear(), now.getUTCMonth(), 1));
  const end = new Date(Date.UTC(now.getUTCFullYear(), now.getUTCMonth() + 1, 1));
  return { start, end, key: start.toISOString().slice(0, 10) };
}

const capColumn = (c: Category) => sql.ref(`cap_${c}`);
const BIGINT_MAX = '9223372036854775807';

/**
 * The cap rule over the locked usage row `u`: the category's own cap, and the free allowance
 * (all categories together) unless the project is subscribed.
 */
function fitsSql(projectId: string, category: Category, count: number, freePerMonth: number) {
  const used = sql.ref(`u.${category}`);
  return sql<boolean>`
    ${used} + ${count}::bigint <= COALESCE((SELECT ${capColumn(category)} FROM project_billing WHERE project_id = ${projectId}::uuid), ${BIGINT_MAX}::bigint)
    AND (u.transactional + u.campaign + u.workflow + ${count}::bigint <= ${freePerMonth}::bigint
         OR EXISTS (SELECT 1 FROM project_billing WHERE project_id = ${projectId}::uuid AND subscription_status IN (${sql.join(SUBSCRIBED_STATUSES)})))`;
}

export interface UsageChange {
  projectId: string;
  period: string;
  category: Category;
  count: number;
  freePerMonth: number;
}

/**
 * Adds `count` to the month's counter when the caps allow it; false (nothing written) when they
 * do not. The UPDATE locks the project's row for the month until the caller's transaction ends:
 * a concurrent queuing transaction waits, then re-checks the caps against the committed count
 * (READ COMMITTED re-evaluates the WHERE on the new row), so the caps hold exactly.
 */
export async function addUsageWithinCaps(trx: Transaction<Database>, c: UsageChange): Promise<boolean> {
  const update = () =>
    sql<{ ok: number }>`
      UPDATE billing_usage u SET ${sql.ref(c.category)} = ${sql.ref(`u.${c.category}`)} + ${c.count}::bigint
      WHERE u.project_id = ${c.projectId}::uuid AND u.period = ${c.period}::date AND ${fitsSql(c.projectId, c.category, c.count, c.freePerMonth)}
      RETURNING 1 AS ok`.execute(trx);
  if ((await update()).rows.length > 0) return true;
  // No row yet for this month (or the caps refuse): create it, then try once more. The second
  // UPDATE is a new statement: it also sees a row a concurrent transaction created meanwhile.
  await sql`
    INSERT INTO billing_usage (project_id, period) VALUES (${c.projectId}::uuid, ${c.period}::date)
    ON CONFLICT DO NOTHING`.execute(trx);
  return (await update()).rows.length > 0;
}

/** Whether `count` more would fit now (no write, no lock): the check before a campaign is accepted. */
export async function usageWouldFit(db: Db, c: UsageChange): Promise<boolean> {
  const { rows } = await sql<{ ok: boolean }>`
    SELECT ${fitsSql(c.projectId, c.category, c.count, c.freePerMonth)} AS ok
    FROM (SELECT COALESCE(MAX(transactional), 0) AS transactional, COALESCE(MAX(campaign), 0) AS campaign, COALESCE(MAX(workflow), 0) AS workflow
          FROM billing_usage WHERE project_id = ${c.projectId}::uuid AND period = ${c.period}::date) u`.execute(db);
  return rows[0]?.ok === true;
}

export interface CapState {
  subscribed: boolean;
  caps: Record<Category, number | null>;
  usage: Record<Category, number>;
}

/** The project's caps, subscription and counters of the month, in one query. */
export async function readCapState(db: Db, projectId: string, period: string): Promise<CapState> {
  const { rows } = await sql<{
    subscribed: boolean;
    cap_transactional: string | null;
    cap_campaign: string | null;
    cap_workflow: string | null;
    transactional: string | null;
    campaign: string | null;
    workflow: string | null;
  }>`
    SELECT COALESCE(b.subscription_status IN (${sql.join(SUBSCRIBED_STATUSES)}), false) AS subscribed,
           b.cap_transactional, b.cap_campaign, b.cap_workflow, u.transactional, u.campaign, u.workflow
    FROM (SELECT ${projectId}::uuid AS id) p
    LEFT JOIN project_billing b ON b.project_id = p.id
    LEFT JOIN billing_usage u ON u.project_id = p.id AND u.period = ${period}::date`.execute(db);
  const r = rows[0];
  const num = (v: string | null | undefined) => (v === null || v === undefined ? null : Number(v));
  return {
    subscribed: r?.subscribed ?? false,
    caps: { transactional: num(r?.cap_transactional), campaign: num(r?.cap_campaign), workflow: num(r?.cap_workflow) },
    usage: { transactional: num(r?.transactional) ?? 0, campaign: num(r?.campaign) ?? 0, workflow: num(r?.workflow) ?? 0 },
  };
}
