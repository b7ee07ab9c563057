import { type Kysely, sql } from 'kysely';
import type { Database } from '../../db/schema.js';

/** Counts above this are reported as this number with `…Capped: true` (onboarding needs "some", not the exact total). */
export const SETUP_COUNT_CAP = 10_000;

export interface SetupStateRow {
  has_verified_domain: boolean;
  contact_count: number;
  template_count: number;
  has_sent_email: boolean;
  last_campaign_sent_at: Date | null;
  has_enabled_workflow: boolean;
}

/**
 * What onboarding needs, in ONE statement of index probes (docs/security.md "Setup state"):
 * EXISTS for the yes/no questions, counts capped at SETUP_COUNT_CAP + 1 rows through the
 * (project_id, created_at, id) indexes (a project with 1,000,000 contacts reads 10,001 index
 * entries, not its table), "has sent" from the deliverability counters (migration 0025), the
 * last campaign from the project's campaigns (a few hundred rows at most).
 */
export async function readSetupState(db: Kysely<Database>, projectId: string): Promise<SetupStateRow | undefined> {
  const cap = SETUP_COUNT_CAP + 1;
  const { rows } = await sql<SetupStateRow>`
    SELECT
      EXISTS (SELECT 1 FROM domains d WHERE d.project_id = p.id AND d.verified) AS has_verified_domain,
      (SELECT count(*) FROM (SELECT 1 FROM contacts c WHERE c.project_id = p.id LIMIT ${cap}) capped)::int AS contact_count,
      (SELECT count(*) FROM (SELECT 1 FROM templates t WHERE t.project_id = p.id LIMIT ${cap}) capped)::int AS template_count,
      EXISTS (SELECT 1 FROM project_email_stats s WHERE s.project_id = p.id AND s.sent > 0) AS has_sent_email,
      (SELECT max(c.sent_at) FROM campaigns c WHERE c.project_id = p.id) AS last_campaign_sent_at,
      EXISTS (SELECT 1 FROM workflows w WHERE w.project_id = p.id AND w.enabled) AS has_enabled_workflow
    FROM projects p
    WHERE p.id = ${projectId}`.execute(db);
  return rows[0];
}
