import { type Kysely, sql } from 'kysely';

/**
 * A campaign's page over time (docs/campaigns.md "Insight"): what the email rows alone cannot
 * answer quickly for a campaign of 1,000,000 emails.
 *
 * - `campaigns.started_at`: when the campaign became SENDING (the insight's default start; `sent_at`
 *   is when it reached SENT). Existing campaigns: their first email's `sent_at`.
 * - `campaign_email_counts`: per campaign, 15-minute UTC buckets (analytics_bucket, migration
 *   0029) of `delivered`, `opened` (first human open: analytics_human_opened_at), `clicked`,
 *   `bounced`, `complained`, each email counted once in the bucket of that milestone's time.
 *   Kept by two triggers on `emails` that share 0029's functions (analytics_bucket,
 *   analytics_human_opened_at and, for anything but a newly set milestone, analytics_email_rows):
 *   a row trigger on UPDATE that fires only for campaign emails whose delivered/human-open/
 *   click/bounce/complaint time changed (sending, machine opens and transactional mail do not
 *   fire it), and an INSERT statement trigger for rows inserted with milestones (seeds; every
 *   send path inserts PENDING rows and leaves at its first check). Writers use the shard
 *   `pg_backend_pid() % 8`, as 0029's tables; the analytics compaction folds old buckets into
 *   shard 0. The campaign's row goes with the campaign (ON DELETE CASCADE).
 * - `email_link_clicks`: one row per (email, URL) clicked, with the number of clicks; written by
 *   the click route (src/modules/tracking, through `campaign_link_click`) in the click's
 *   transaction, for every project email
 *   (campaign or not). `url_key` = md5(url)::uuid keeps the key short whatever the URL's length.
 * - `campaign_link_counts`: per campaign and URL (and writer shard), `clicks` (every click) and
 *   `unique_clicks` (emails that clicked it: +1 when the email's row above is created). Written
 *   by the same function call as `email_link_clicks`.
 * - `emails_campaign_feedback_idx`: a campaign's bounced and complained emails newest first
 *   (partial: only those rows are in it, so delivery, opens and clicks never touch it).
 *
 * Backfill, in this transaction: the bucket counts from the email rows; the link tables from the
 * `email.click` events, which recorded only an email's first click and its URL (so an old email
 * counts one click, of that URL).
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  // When a campaign became SENDING (set by the transitions from now on; before, its first email's sending).
  await sql`ALTER TABLE campaigns ADD COLUMN started_at timestamptz`.execute(db);
  await sql`
    UPDATE campaigns c SET started_at = f.first_sent
    FROM (SELECT campaign_id, min(sent_at) AS first_sent FROM emails WHERE campaign_id IS NOT NULL GROUP BY campaign_id) f
    WHERE c.id = f.campaign_id`.execute(db);
  await sql`
    CREATE TABLE campaign_email_counts (
      project_id uuid NOT NULL REFERENCES projects (id) ON DELETE CASCADE,
      campaign_id uuid NOT NULL REFERENCES campaigns (id) ON DELETE CASCADE,
      bucket timestamptz NOT NULL,
      shard smallint NOT NULL,
      delivered integer NOT NULL DEFAULT 0,
      opened integer NOT NULL DEFAULT 0,
      clicked integer NOT NULL DEFAULT 0,
      bounced integer NOT NULL DEFAULT 0,
      complained integer NOT NULL DEFAULT 0,
      PRIMARY KEY (campaign_id, bucket, shard)
    )`.execute(db);
  // The reset deletes by project; the compaction finds shards to fold.
  await sql`CREATE INDEX campaign_email_counts_project_idx ON campaign_email_counts (project_id)`.execute(db);
  await sql`CREATE INDEX campaign_email_counts_shards_idx ON campaign_email_counts (bucket) WHERE shard <> 0`.execute(db);

  await sql`
    CREATE TABLE email_link_clicks (
      project_id uuid NOT NULL REFERENCES projects (id) ON DELETE CASCADE,
      -- No foreign key to emails: emails are deleted only with their project (reset: WIPED in
      -- src/modules/projects/lifecycle.repo.ts; deletion: the project's cascade), and the check,
      -- with the index its cascade would need, cost every click ~0.1 ms (bench/campaign-insight-cost.mjs).
      email_id uuid NOT NULL,
      url_key uuid NOT NULL,
      url text NOT NULL,
      clicks integer NOT NULL,
      first_clicked_at timestamptz NOT NULL,
      last_clicked_at timestamptz NOT NULL,
      PRIMARY KEY (project_id, email_id, url_key)
    )`.execute(db);

  await sql`
    CREATE TABLE campaign_link_counts (
      project_id uuid NOT NULL REFERENCES projects (id) ON DELETE CASCADE,
      campaign_id uuid NOT NULL REFERENCES campaigns (id) ON DELETE CASCADE,
      url_key uuid NOT NULL,
      shard smallint NOT NULL,
      url text NOT NULL,
      clicks integer NOT NULL DEFAULT 0,
      unique_clicks integer NOT NULL DEFAULT 0,
      PRIMARY KEY (campaign_id, url_key, shard)
    )`.execute(db);
  await sql`CREATE INDEX campaign_link_counts_project_idx ON campaign_link_counts (project_id)`.execute(db);

  // One click of a URL (the click route calls it in the click's transaction, tracking.repo.ts): the
  // (email, URL) row counts every click; a campaign email's URL counter grows by one, its unique
  // clicks by one on the email's first click of that URL. A function so that its statements' plans
  // are cached per connection (planned each time as one SQL statement, the click cost ~0.2 ms more).
  await sql`
    CREATE FUNCTION campaign_link_click(p_email uuid, p_url text) RETURNS void LANGUAGE plpgsql AS $$
    DECLARE
      k uuid := md5(p_url)::uuid;
      p uuid;
      c uuid;
      first boolean;
    BEGIN
      SELECT project_id, campaign_id INTO p, c FROM emails WHERE id = p_email AND project_id IS NOT NULL;
      IF p IS NULL THEN RETURN; END IF;
      INSERT INTO email_link_clicks AS l (project_id, email_id, url_key, url, clicks, first_clicked_at, last_clicked_at)
      VALUES (p, p_email, k, p_url, 1, now(), now())
      ON CONFLICT (project_id, email_id, url_key) DO UPDATE SET clicks = l.clicks + 1, last_clicked_at = now()
      RETURNING l.clicks = 1 INTO first;
      IF c IS NOT NULL THEN
        INSERT INTO campaign_link_counts AS x (project_id, campaign_id, url_key, shard, url, clicks, unique_clicks)
        VALUES (p, c, k, pg_backend_pid() % 8, p_url, 1, first::int)
        ON CONFLICT (campaign_id, url_key, shard) DO UPDATE SET clicks = x.clicks + 1, unique_clicks = x.unique_clicks + excluded.unique_clicks;
      END IF;
    END $$`.execute(db);

  await sql`
    CREATE INDEX emails_campaign_feedback_idx ON emails (project_id, campaign_id, coalesce(complained_at, bounced_at) DESC, id DESC)
      WHERE campaign_id IS NOT NULL AND status IN ('BOUNCED', 'COMPLAINED')`.execute(db);

  // Row trigger on UPDATE (see the WHEN below). Fast path: milestones only newly set, all in one
  // bucket (delivery, a first open, a click, a notification): one single-row upsert. Anything else
  // (a milestone moved or cleared): the new row's contribution minus the old one's, per bucket.
  await sql`
    CREATE FUNCTION campaign_email_update() RETURNS trigger LANGUAGE plpgsql AS $$
    DECLARE
      h_old timestamptz := analytics_human_opened_at(OLD.opened_at, OLD.human_opened_at);
      h_new timestamptz := analytics_human_opened_at(NEW.opened_at, NEW.human_opened_at);
      nd int := (OLD.delivered_at IS NULL AND NEW.delivered_at IS NOT NULL)::int;
      nh int := (h_old IS NULL AND h_new IS NOT NULL)::int;
      nc int := (OLD.clicked_at IS NULL AND NEW.clicked_at IS NOT NULL)::int;
      nb int := (OLD.bounced_at IS NULL AND NEW.bounced_at IS NOT NULL)::int;
      nx int := (OLD.complained_at IS NULL AND NEW.complained_at IS NOT NULL)::int;
      b timestamptz;
    BEGIN
      b := analytics_bucket(coalesce(CASE WHEN nd = 1 THEN NEW.delivered_at END, CASE WHEN nh = 1 THEN h_new END,
                                     CASE WHEN nc = 1 THEN NEW.clicked_at END, CASE WHEN nb = 1 THEN NEW.bounced_at END,
                                     CASE WHEN nx = 1 THEN NEW.complained_at END));
      IF b IS NOT NULL
         AND (nd = 1 OR NEW.delivered_at IS NOT DISTINCT FROM OLD.delivered_at) AND (nh = 1 OR h_new IS NOT DISTINCT FROM h_old)
         AND (nc = 1 OR NEW.clicked_at IS NOT DISTINCT FROM OLD.clicked_at) AND (nb = 1 OR NEW.bounced_at IS NOT DISTINCT FROM OLD.bounced_at)
         AND (nx = 1 OR NEW.complained_at IS NOT DISTINCT FROM OLD.complained_at)
         AND (nd = 0 OR analytics_bucket(NEW.delivered_at) = b) AND (nh = 0 OR analytics_bucket(h_new) = b)
         AND (nc = 0 OR analytics_bucket(NEW.clicked_at) = b) AND (nb = 0 OR analytics_bucket(NEW.bounced_at) = b)
         AND (nx = 0 OR analytics_bucket(NEW.complained_at) = b)
      THEN
        INSERT INTO campaign_email_counts AS x (project_id, campaign_id, bucket, shard, delivered, opened, clicked, bounced, complained)
        VALUES (NEW.project_id, NEW.campaign_id, b, pg_backend_pid() % 8, nd, nh, nc, nb, nx)
        ON CONFLICT (campaign_id, bucket, shard) DO UPDATE SET
          delivered = x.delivered + excluded.delivered, opened = x.opened + excluded.opened, clicked = x.clicked + excluded.clicked,
          bounced = x.bounced + excluded.bounced, complained = x.complained + excluded.complained;
      ELSE
        INSERT INTO campaign_email_counts AS x (project_id, campaign_id, bucket, shard, delivered, opened, clicked, bounced, complained)
        SELECT NEW.project_id, NEW.campaign_id, r.bucket, pg_backend_pid() % 8, sum(r.delivered), sum(r.opened), sum(r.clicked),
               sum(r.bounced), sum(r.complained)
        FROM (
          SELECT * FROM analytics_email_rows(1, NULL, NEW.delivered_at, NEW.opened_at, NEW.human_opened_at, NEW.clicked_at,
                                             NEW.bounced_at, NEW.complained_at)
          UNION ALL
          SELECT * FROM analytics_email_rows(-1, NULL, OLD.delivered_at, OLD.opened_at, OLD.human_opened_at, OLD.clicked_at,
                                             OLD.bounced_at, OLD.complained_at)
        ) r
        GROUP BY r.bucket
        HAVING sum(r.delivered) <> 0 OR sum(r.opened) <> 0 OR sum(r.clicked) <> 0 OR sum(r.bounced) <> 0 OR sum(r.complained) <> 0
        ORDER BY r.bucket
        ON CONFLICT (campaign_id, bucket, shard) DO UPDATE SET
          delivered = x.delivered + excluded.delivered, opened = x.opened + excluded.opened, clicked = x.clicked + excluded.clicked,
          bounced = x.bounced + excluded.bounced, complained = x.complained + excluded.complained;
      END IF;
      RETURN NULL;
    END $$`.execute(db);

  // Statement trigger on INSERT: rows inserted with milestones (not the send paths' PENDING rows).
  await sql`
    CREATE FUNCTION campaign_email_insert() RETURNS trigger LANGUAGE plpgsql AS $$
    BEGIN
      IF NOT EXISTS (SELECT 1 FROM new_emails n WHERE n.campaign_id IS NOT NULL AND n.project_id IS NOT NULL
                     AND (n.delivered_at IS NOT NULL OR n.opened_at IS NOT NULL OR n.clicked_at IS NOT NULL
                          OR n.bounced_at IS NOT NULL OR n.complained_at IS NOT NULL)) THEN
        RETURN NULL;
      END IF;
      INSERT INTO campaign_email_counts AS x (project_id, campaign_id, bucket, shard, delivered, opened, clicked, bounced, complained)
      SELECT n.project_id, n.campaign_id, r.bucket, pg_backend_pid() % 8, sum(r.delivered), sum(r.opened), sum(r.clicked),
             sum(r.bounced), sum(r.complained)
      FROM new_emails n
      CROSS JOIN LATERAL analytics_email_rows(1, NULL, n.delivered_at, n.opened_at, n.human_opened_at, n.clicked_at,
                                              n.bounced_at, n.complained_at) r
      WHERE n.campaign_id IS NOT NULL AND n.project_id IS NOT NULL
      GROUP BY n.project_id, n.campaign_id, r.bucket
      HAVING sum(r.delivered) <> 0 OR sum(r.opened) <> 0 OR sum(r.clicked) <> 0 OR sum(r.bounced) <> 0 OR sum(r.complained) <> 0
      ORDER BY n.campaign_id, r.bucket
      ON CONFLICT (campaign_id, bucket, shard) DO UPDATE SET
        delivered = x.delivered + excluded.delivered, opened = x.opened + excluded.opened, clicked = x.clicked + excluded.clicked,
        bounced = x.bounced + excluded.bounced, complained = x.complained + excluded.complained;
      RETURN NULL;
    END $$`.execute(db);

  // Existing rows, in this transaction: the triggers below take over from here.
  await sql`
    INSERT INTO campaign_email_counts (project_id, campaign_id, bucket, shard, delivered, opened, clicked, bounced, complained)
    SELECT e.project_id, e.campaign_id, r.bucket, 0, sum(r.delivered), sum(r.opened), sum(r.clicked), sum(r.bounced), sum(r.complained)
    FROM emails e
    JOIN campaigns c ON c.id = e.campaign_id
    CROSS JOIN LATERAL analytics_email_rows(1, NULL, e.delivered_at, e.opened_at, e.human_opened_at, e.clicked_at,
                                            e.bounced_at, e.complained_at) r
    WHERE e.campaign_id IS NOT NULL AND e.project_id IS NOT NULL
    GROUP BY e.project_id, e.campaign_id, r.bucket
    HAVING sum(r.delivered) <> 0 OR sum(r.opened) <> 0 OR sum(r.clicked) <> 0 OR sum(r.bounced) <> 0 OR sum(r.complained) <> 0`.execute(db);
  await sql`
    INSERT INTO email_link_clicks (project_id, email_id, url_key, url, clicks, first_clicked_at, last_clicked_at)
    SELECT DISTINCT ON (e.id) e.project_id, e.id, md5(ev.data ->> 'url')::uuid, ev.data ->> 'url', 1, ev.created_at, ev.created_at
    FROM events ev
    JOIN emails e ON e.id::text = ev.data ->> 'emailId' AND e.project_id = ev.project_id
    WHERE ev.name = 'email.click' AND ev.data ->> 'url' IS NOT NULL
      AND (ev.data ->> 'emailId') ~ '^[0-9a-fA-F-]{36}$'
    ORDER BY e.id, ev.created_at`.execute(db);
  await sql`
    INSERT INTO campaign_link_counts (project_id, campaign_id, url_key, shard, url, clicks, unique_clicks)
    SELECT l.project_id, e.campaign_id, l.url_key, 0, min(l.url), sum(l.clicks), count(*)
    FROM email_link_clicks l
    JOIN emails e ON e.id = l.email_id
    JOIN campaigns c ON c.id = e.campaign_id
    GROUP BY l.project_id, e.campaign_id, l.url_key`.execute(db);

  await sql`
    CREATE TRIGGER campaign_emails_insert AFTER INSERT ON emails REFERENCING NEW TABLE AS new_emails
    FOR EACH STATEMENT EXECUTE FUNCTION campaign_email_insert()`.execute(db);
  await sql`
    CREATE TRIGGER campaign_emails_update
    AFTER UPDATE OF delivered_at, opened_at, human_opened_at, clicked_at, bounced_at, complained_at ON emails
    FOR EACH ROW
    WHEN (NEW.campaign_id IS NOT NULL AND NEW.project_id IS NOT NULL AND NEW.campaign_id IS NOT DISTINCT FROM OLD.campaign_id AND (
          OLD.delivered_at IS DISTINCT FROM NEW.delivered_at
       OR analytics_human_opened_at(OLD.opened_at, OLD.human_opened_at) IS DISTINCT FROM analytics_human_opened_at(NEW.opened_at, NEW.human_opened_at)
       OR OLD.clicked_at IS DISTINCT FROM NEW.clicked_at OR OLD.bounced_at IS DISTINCT FROM NEW.bounced_at
       OR OLD.complained_at IS DISTINCT FROM NEW.complained_at))
    EXECUTE FUNCTION campaign_email_update()`.execute(db);
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await sql`DROP TRIGGER campaign_emails_update ON emails`.execute(db);
  await sql`DROP TRIGGER campaign_emails_insert ON emails`.execute(db);
  await sql`DROP FUNCTION campaign_email_update(), campaign_email_insert(), campaign_link_click(uuid, text)`.execute(db);
  await sql`DROP INDEX emails_campaign_feedback_idx`.execute(db);
  await sql`DROP TABLE campaign_link_counts, email_link_clicks, campaign_email_counts`.execute(db);
  await sql`ALTER TABLE campaigns DROP COLUMN started_at`.execute(db);
}
