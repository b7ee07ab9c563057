import { type Kysely, sql } from 'kysely';

/**
 * Optional Stripe billing (docs/billing.md):
 * - project_billing: a project's Stripe customer and subscription (kept by the payment
 *   webhooks) and its own monthly caps per category (PUT billing-limits);
 * - billing_usage: the emails queued per project, UTC month and category, incremented in the
 *   transaction that queues them, under the caps (one row per project and month: its lock makes
 *   the cap exact under concurrent sends);
 * - billing_events: the Stripe event ids applied, so a replayed webhook changes nothing.
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await sql`
    CREATE TABLE project_billing (
      project_id uuid PRIMARY KEY REFERENCES projects(id) ON DELETE CASCADE,
      stripe_customer_id text UNIQUE,
      stripe_subscription_id text UNIQUE,
      subscription_status text,
      current_period_start timestamptz,
      current_period_end timestamptz,
      stripe_state_at timestamptz,
      cap_transactional bigint CHECK (cap_transactional >= 0),
      cap_campaign bigint CHECK (cap_campaign >= 0),
      cap_workflow bigint CHECK (cap_workflow >= 0),
      updated_at timestamptz NOT NULL DEFAULT now()
    )`.execute(db);
  await sql`
    CREATE TABLE billing_usage (
      project_id uuid NOT NULL REFERENCES projects(id) ON DELETE CASCADE,
      period date NOT NULL,
      transactional bigint NOT NULL DEFAULT 0,
      campaign bigint NOT NULL DEFAULT 0,
      workflow bigint NOT NULL DEFAULT 0,
      PRIMARY KEY (project_id, period)
    )`.execute(db);
  await sql`
    CREATE TABLE billing_events (
      id text PRIMARY KEY,
      type text NOT NULL,
      project_id uuid,
      received_at timestamptz NOT NULL DEFAULT now()
    )`.execute(db);
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await sql`DROP TABLE billing_events, billing_usage, project_billing`.execute(db);
}
