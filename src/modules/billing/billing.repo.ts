import { type Kysely, sql, type Transaction } from 'kysely';
import type { Database, ProjectRole } from '../../db/schema.js';
import { isUuid } from '../../lib/uuid.js';
import type { Category } from './usage.repo.js';

type Db = Kysely<Database> | Transaction<Database>;

export interface BillingRow {
  projectId: string;
  projectName: string;
  role: ProjectRole;
  userEmail: string;
  customerId: string | null;
  subscriptionId: string | null;
  status: string | null;
  periodStart: Date | null;
  periodEnd: Date | null;
}

/** The user's role in the project and its billing row (nulls when it has none); undefined: not a member. */
export async function findMemberBilling(db: Db, userId: string, projectId: string): Promise<BillingRow | undefined> {
  if (!isUuid(projectId)) return undefined;
  const row = await db
    .selectFrom('memberships as m')
    .innerJoin('projects as p', 'p.id', 'm.project_id')
    .innerJoin('users as u', 'u.id', 'm.user_id')
    .leftJoin('project_billing as b', 'b.project_id', 'm.project_id')
    .select(['p.id', 'p.name', 'm.role', 'u.email', 'b.stripe_customer_id', 'b.stripe_subscription_id', 'b.subscription_status', 'b.current_period_start', 'b.current_period_end'])
    .where('m.user_id', '=', userId)
    .where('m.project_id', '=', projectId)
    .executeTakeFirst();
  if (!row) return undefined;
  return {
    projectId: row.id,
    projectName: row.name,
    role: row.role,
    userEmail: row.email,
    customerId: row.stripe_customer_id,
    subscriptionId: row.stripe_subscription_id,
    status: row.subscription_status,
    periodStart: row.current_period_start,
    periodEnd: row.current_period_end,
  };
}

/** Records the project's Stripe customer unless it has one already; answers the one it has now. */
export async function saveCustomerId(db: Db, projectId: string, customerId: string): Promise<string> {
  await sql`
    INSERT INTO project_billing (project_id, stripe_customer_id) VALUES (${projectId}::uuid, ${customerId})
    ON CONFLICT (project_id) DO UPDATE SET stripe_customer_id = COALESCE(project_billing.stripe_customer_id, EXCLUDED.stripe_customer_id), updated_at = now()`.execute(db);
  const row = await db.selectFrom('project_billing').select('stripe_customer_id').where('project_id', '=', projectId).executeTakeFirstOrThrow();
  return row.stripe_customer_id ?? customerId;
}

/** Sets the caps given (null removes one; absent keeps it). */
export async function saveCaps(db: Db, projectId: string, caps: Partial<Record<Category, number | null>>): Promise<void> {
  const values = { cap_transactional: caps.transactional, cap_campaign: caps.campaign, cap_workflow: caps.workflow };
  const set = Object.fromEntries(Object.entries(values).filter(([, v]) => v !== undefined));
  if (Object.keys(set).length === 0) return;
  await db
    .insertInto('project_billing')
    .values({ project_id: projectId, ...set })
    .onConflict((oc) => oc.column('project_id').doUpdateSet({ ...set, updated_at: sql`now()` }))
    .execute();
}

/**
 * Deliverable emails of the project created in [start, end), per category, from the email rows
 * (CANCELLED ones were never sent: suppressed, cancelled campaigns). One range scan of
 * emails_project_created_idx. Test sends count as transactional, like their cap.
 */
export async function countEmailsBySource(db: Db, projectId: string, start: Date, end: Date): Promise<Record<Category, number>> {
  const { rows } = await sql<{ source: string; n: string }>`
    SELECT source, count(*) AS n FROM emails
    WHERE project_id = ${projectId}::uuid AND created_at >= ${start} AND created_at < ${end} AND status <> 'CANCELLED'
    GROUP BY source`.execute(db);
  const out: Record<Category, number> = { transactional: 0, campaign: 0, workflow: 0 };
  for (const r of rows) {
    const category: Category | undefined = r.source === 'CAMPAIGN' ? 'campaign' : r.source === 'WORKFLOW' ? 'workflow' : r.source === 'SEND' || r.source === 'TEST' ? 'transactional' : undefined;
    if (category) out[category] += Number(r.n);
  }
  return out;
}
