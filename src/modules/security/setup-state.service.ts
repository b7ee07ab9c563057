import type { Kysely } from 'kysely';
import type { Database } from '../../db/schema.js';
import { notFound } from '../../http/errors.js';
import type { BillingSetupState, SetupState } from './security.schema.js';
import { readSetupState, SETUP_COUNT_CAP } from './setup-state.repo.js';

/** The billing part of the setup state; without one (billing not wired), `{enabled: false}`. */
export type BillingStateReader = (db: Kysely<Database>, projectId: string) => Promise<BillingSetupState>;

/** The setup state of a project (the caller checked the membership). */
export async function readProjectSetupState(
  db: Kysely<Database>,
  input: { projectId: string; billing?: BillingStateReader },
): Promise<SetupState> {
  const row = await readSetupState(db, input.projectId);
  if (!row) throw notFound('Project');
  const billing = input.billing ? await input.billing(db, input.projectId) : { enabled: false };
  return {
    projectId: input.projectId,
    hasVerifiedDomain: row.has_verified_domain,
    contactCount: Math.min(row.contact_count, SETUP_COUNT_CAP),
    contactCountCapped: row.contact_count > SETUP_COUNT_CAP,
    templateCount: Math.min(row.template_count, SETUP_COUNT_CAP),
    templateCountCapped: row.template_count > SETUP_COUNT_CAP,
    hasSentEmail: row.has_sent_email,
    lastCampaignSentAt: row.last_campaign_sent_at ? row.last_campaign_sent_at.toISOString() : null,
    hasEnabledWorkflow: row.has_enabled_workflow,
    billing,
  };
}
