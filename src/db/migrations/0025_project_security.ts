import { type Kysely, sql } from 'kysely';

/**
 * Deliverability security (src/modules/security, docs/security.md).
 *
 * `project_email_stats`: per project, hourly buckets (UTC) of emails sent, hard-bounced and
 * complained, kept by triggers on `emails`, so the reputation check (run on every bounce and
 * complaint notification) sums at most a few thousand small rows instead of counting the
 * project's emails. Buckets are sharded by backend (`pg_backend_pid() % 8`) so that concurrent
 * deliveries of one project rarely wait on the same counter row. Buckets older than 8 days are
 * folded into one `-infinity` bucket per project (the `security-stats-compact` cron job). Rows
 * are counted when a milestone is set (sent_at, bounced_at, complained_at go from null to a
 * time), into the hour of that time (the instance's own mail, with no project, is not counted); deleting emails (a project reset) does not uncount them.
 *
 * `project_suspensions`: every time a project was disabled (automatically or by an operator)
 * and when and by whom it was lifted, with the all-time totals at the lift (the reputation is
 * judged from there on).
 *
 * `emails_project_pending_idx`: the PENDING emails of a project, which a suspension cancels.
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await sql`
    CREATE TABLE project_email_stats (
      project_id uuid NOT NULL REFERENCES projects (id) ON DELETE CASCADE,
      bucket timestamptz NOT NULL,
      shard smallint NOT NULL,
      sent bigint NOT NULL DEFAULT 0,
      bounced bigint NOT NULL DEFAULT 0,
      complained bigint NOT NULL DEFAULT 0,
      PRIMARY KEY (project_id, bucket, shard)
    )`.execute(db);

  await sql`
    CREATE FUNCTION project_email_stats_count() RETURNS trigger LANGUAGE plpgsql AS $$
    DECLARE
      my_shard smallint := pg_backend_pid() % 8;
    BEGIN
      IF NEW.sent_at IS NOT NULL AND (TG_OP = 'INSERT' OR OLD.sent_at IS NULL) THEN
        INSERT INTO project_email_stats AS s (project_id, bucket, shard, sent)
        VALUES (NEW.project_id, date_trunc('hour', NEW.sent_at, 'UTC'), my_shard, 1)
        ON CONFLICT (project_id, bucket, shard) DO UPDATE SET sent = s.sent + 1;
      END IF;
      IF NEW.bounced_at IS NOT NULL AND (TG_OP = 'INSERT' OR OLD.bounced_at IS NULL) THEN
        INSERT INTO project_email_stats AS s (project_id, bucket, shard, bounced)
        VALUES (NEW.project_id, date_trunc('hour', NEW.bounced_at, 'UTC'), my_shard, 1)
        ON CONFLICT (project_id, bucket, shard) DO UPDATE SET bounced = s.bounced + 1;
      END IF;
      IF NEW.complained_at IS NOT NULL AND (TG_OP = 'INSERT' OR OLD.complained_at IS NULL) THEN
        INSERT INTO project_email_stats AS s (project_id, bucket, shard, complained)
        VALUES (NEW.project_id, date_trunc('hour', NEW.complained_at, 'UTC'), my_shard, 1)
        ON CONFLICT (project_id, bucket, shard) DO UPDATE SET complained = s.complained + 1;
      END IF;
      RETURN NULL;
    END $$`.execute(db);

  // Existing emails first, in this transaction: the triggers below take over from here.
  await sql`
    INSERT INTO project_email_stats (project_id, bucket, shard, sent, bounced, complained)
    SELECT project_id, bucket, 0, sum(s), sum(b), sum(c)
    FROM (
      SELECT project_id, date_trunc('hour', sent_at, 'UTC') AS bucket, 1 AS s, 0 AS b, 0 AS c FROM emails WHERE sent_at IS NOT NULL AND project_id IS NOT NULL
      UNION ALL
      SELECT project_id, date_trunc('hour', bounced_at, 'UTC'), 0, 1, 0 FROM emails WHERE bounced_at IS NOT NULL AND project_id IS NOT NULL
      UNION ALL
      SELECT project_id, date_trunc('hour', complained_at, 'UTC'), 0, 0, 1 FROM emails WHERE complained_at IS NOT NULL AND project_id IS NOT NULL
    ) counted
    GROUP BY project_id, bucket`.execute(db);

  await sql`
    CREATE TRIGGER emails_stats_insert AFTER INSERT ON emails FOR EACH ROW
    WHEN (NEW.project_id IS NOT NULL AND (NEW.sent_at IS NOT NULL OR NEW.bounced_at IS NOT NULL OR NEW.complained_at IS NOT NULL))
    EXECUTE FUNCTION project_email_stats_count()`.execute(db);
  await sql`
    CREATE TRIGGER emails_stats_update AFTER UPDATE OF sent_at, bounced_at, complained_at ON emails FOR EACH ROW
    WHEN (NEW.project_id IS NOT NULL AND (
          (OLD.sent_at IS NULL AND NEW.sent_at IS NOT NULL)
       OR (OLD.bounced_at IS NULL AND NEW.bounced_at IS NOT NULL)
       OR (OLD.complained_at IS NULL AND NEW.complained_at IS NOT NULL)))
    EXECUTE FUNCTION project_email_stats_count()`.execute(db);

  await sql`
    CREATE TABLE project_suspensions (
      id uuid PRIMARY KEY DEFAULT uuid_generate_v7(),
      project_id uuid NOT NULL REFERENCES projects (id) ON DELETE CASCADE,
      source text NOT NULL CHECK (source IN ('AUTOMATIC', 'OPERATOR', 'BILLING')),
      reason text NOT NULL,
      metrics jsonb NOT NULL DEFAULT '{}',
      created_at timestamptz NOT NULL DEFAULT now(),
      lifted_at timestamptz,
      lifted_by text,
      lifted_sent bigint,
      lifted_bounced bigint,
      lifted_complained bigint,
      CHECK ((lifted_at IS NULL) = (lifted_by IS NULL))
    )`.execute(db);
  await sql`CREATE INDEX project_suspensions_project_idx ON project_suspensions (project_id, created_at DESC)`.execute(db);
  // Projects disabled before this migration keep their reason as an open suspension.
  await sql`
    INSERT INTO project_suspensions (project_id, source, reason, created_at)
    SELECT id,
           CASE WHEN disabled_reason LIKE 'bounce rate%' OR disabled_reason LIKE 'complaint rate%' THEN 'AUTOMATIC' ELSE 'OPERATOR' END,
           coalesce(disabled_reason, 'disabled'), coalesce(disabled_at, now())
    FROM projects WHERE disabled`.execute(db);

  await sql`CREATE INDEX emails_project_pending_idx ON emails (project_id) WHERE status = 'PENDING'`.execute(db);
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await sql`DROP INDEX emails_project_pending_idx`.execute(db);
  await sql`DROP TABLE project_suspensions`.execute(db);
  await sql`DROP TRIGGER emails_stats_update ON emails`.execute(db);
  await sql`DROP TRIGGER emails_stats_insert ON emails`.execute(db);
  await sql`DROP FUNCTION project_email_stats_count()`.execute(db);
  await sql`DROP TABLE project_email_stats`.execute(db);
}
