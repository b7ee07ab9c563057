import { type Kysely, sql } from 'kysely';

/**
 * Analytics rollups (src/modules/analytics, docs/analytics.md): counters kept by triggers, so
 * that no analytics request counts a project's emails or events.
 *
 * Machine opens (docs/analytics.md "Machine opens"): `emails.human_opened_at` is the first open
 * judged human (or the open a click implies), `emails.machine_open_count` the opens judged a
 * machine's. Opens recorded before this migration could not be told apart: they count as human.
 * `analytics_human_opened_at(opened_at, human_opened_at)` is THE rule (an open before this
 * migration's time counts at opened_at), used by the triggers, the backfill and the tests, so no
 * email row is rewritten here.
 *
 * Tables (every count is per project; `shard` = `pg_backend_pid() % 8` of the writer, so concurrent
 * writers of one project rarely wait on one row; reads sum the shards; `analytics-compact` folds the
 * shards of buckets older than an hour into shard 0):
 * - `analytics_email_counts`: 15-minute UTC buckets (every time zone in use has an offset that is a
 *   multiple of 15 minutes, so local hours and days are unions of buckets). `sent`, `delivered`,
 *   `opened` (first human open), `opened_any` (first open, machines included), `clicked`, `bounced`,
 *   `complained` count each email once, in the bucket of that milestone's time; `sent_delivered` …
 *   `sent_complained` count, in the bucket of the email's sent_at, the emails that have that
 *   milestone by now (the denominators of rates: "of the emails sent then").
 * - `analytics_campaign_counts`: all-time counts per campaign (top campaigns).
 * - `analytics_event_counts` (15-minute buckets) and `analytics_event_daily` (UTC days): tracked
 *   events per name; the service's own names (email.*, contact.subscribed/unsubscribed,
 *   segment.<slug>.entry/exit) are not counted.
 *
 * Triggers keep them equal to a COUNT over the current rows: for emails, every change of a
 * milestone column adds the new row's contribution and subtracts the old one's (row trigger on
 * UPDATE; one aggregated upsert per INSERT statement); for events, one aggregated upsert per INSERT
 * statement (a /v1/track batch pays once). There is no DELETE trigger (a project reset deletes
 * these tables with the rest, src/modules/projects/lifecycle.repo.ts): deleting events of a name or
 * a contact adjusts the counts in the deleting transaction (the analytics facade). Emails are only
 * deleted with their project (reset, deletion).
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await sql`ALTER TABLE emails ADD COLUMN human_opened_at timestamptz, ADD COLUMN machine_open_count integer NOT NULL DEFAULT 0`.execute(db);

  const { rows } = await sql<{ now: string }>`SELECT to_char(now() AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"') AS now`.execute(db);
  const cutoff = rows[0]?.now;
  if (!cutoff) throw new Error('no time');
  await sql`
    CREATE FUNCTION analytics_human_opened_at(opened_at timestamptz, human_opened_at timestamptz) RETURNS timestamptz
    LANGUAGE sql IMMUTABLE PARALLEL SAFE
    AS $$ SELECT CASE WHEN opened_at < timestamptz ${sql.lit(cutoff)} THEN opened_at ELSE human_opened_at END $$`.execute(db);
  await sql`
    CREATE FUNCTION analytics_bucket(at timestamptz) RETURNS timestamptz
    LANGUAGE sql IMMUTABLE PARALLEL SAFE
    AS $$ SELECT date_bin('15 minutes', at, timestamptz '2000-01-01 00:00:00+00') $$`.execute(db);
  // The same names as isReservedEventName (src/modules/events/event-names.ts).
  await sql`
    CREATE FUNCTION analytics_is_system_event(name text) RETURNS boolean
    LANGUAGE sql IMMUTABLE PARALLEL SAFE
    AS $$ SELECT lower(name) LIKE 'email.%' OR lower(name) IN ('contact.subscribed', 'contact.unsubscribed')
              OR lower(name) ~ '^segment\\..+\\.(entry|exit)$' $$`.execute(db);

  await sql`
    CREATE TABLE analytics_email_counts (
      project_id uuid NOT NULL REFERENCES projects (id) ON DELETE CASCADE,
      bucket timestamptz NOT NULL,
      shard smallint NOT NULL,
      sent integer NOT NULL DEFAULT 0,
      delivered integer NOT NULL DEFAULT 0,
      opened integer NOT NULL DEFAULT 0,
      opened_any integer NOT NULL DEFAULT 0,
      clicked integer NOT NULL DEFAULT 0,
      bounced integer NOT NULL DEFAULT 0,
      complained integer NOT NULL DEFAULT 0,
      sent_delivered integer NOT NULL DEFAULT 0,
      sent_opened integer NOT NULL DEFAULT 0,
      sent_clicked integer NOT NULL DEFAULT 0,
      sent_bounced integer NOT NULL DEFAULT 0,
      sent_complained integer NOT NULL DEFAULT 0,
      PRIMARY KEY (project_id, bucket, shard)
    )`.execute(db);
  await sql`CREATE INDEX analytics_email_counts_shards_idx ON analytics_email_counts (bucket) WHERE shard <> 0`.execute(db);

  await sql`
    CREATE TABLE analytics_campaign_counts (
      project_id uuid NOT NULL REFERENCES projects (id) ON DELETE CASCADE,
      campaign_id uuid NOT NULL REFERENCES campaigns (id) ON DELETE CASCADE,
      shard smallint NOT NULL,
      sent integer NOT NULL DEFAULT 0,
      delivered integer NOT NULL DEFAULT 0,
      opened integer NOT NULL DEFAULT 0,
      clicked integer NOT NULL DEFAULT 0,
      bounced integer NOT NULL DEFAULT 0,
      complained integer NOT NULL DEFAULT 0,
      PRIMARY KEY (project_id, campaign_id, shard)
    )`.execute(db);
  await sql`CREATE INDEX analytics_campaign_counts_campaign_idx ON analytics_campaign_counts (campaign_id)`.execute(db);

  await sql`
    CREATE TABLE analytics_event_counts (
      project_id uuid NOT NULL REFERENCES projects (id) ON DELETE CASCADE,
      bucket timestamptz NOT NULL,
      name text NOT NULL,
      shard smallint NOT NULL,
      count integer NOT NULL,
      PRIMARY KEY (project_id, bucket, name, shard)
    )`.execute(db);
  await sql`CREATE INDEX analytics_event_counts_name_idx ON analytics_event_counts (project_id, name)`.execute(db);
  await sql`CREATE INDEX analytics_event_counts_shards_idx ON analytics_event_counts (bucket) WHERE shard <> 0`.execute(db);
  await sql`
    CREATE TABLE analytics_event_daily (
      project_id uuid NOT NULL REFERENCES projects (id) ON DELETE CASCADE,
      day date NOT NULL,
      name text NOT NULL,
      shard smallint NOT NULL,
      count integer NOT NULL,
      PRIMARY KEY (project_id, day, name, shard)
    )`.execute(db);
  await sql`CREATE INDEX analytics_event_daily_name_idx ON analytics_event_daily (project_id, name)`.execute(db);
  await sql`CREATE INDEX analytics_event_daily_shards_idx ON analytics_event_daily (day) WHERE shard <> 0`.execute(db);

  // One email's contribution to analytics_email_counts, with a sign (+1: the new row, -1: the old one).
  await sql`
    CREATE FUNCTION analytics_email_rows(sign integer, sent_at timestamptz, delivered_at timestamptz, opened_at timestamptz,
                                         human_opened_at timestamptz, clicked_at timestamptz, bounced_at timestamptz,
                                         complained_at timestamptz)
    RETURNS TABLE (bucket timestamptz, sent integer, delivered integer, opened integer, opened_any integer, clicked integer,
                   bounced integer, complained integer, sent_delivered integer, sent_opened integer, sent_clicked integer,
                   sent_bounced integer, sent_complained integer)
    LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$
      SELECT analytics_bucket(v.at), v.s, v.d, v.o, v.oa, v.c, v.b, v.x, v.sd, v.so, v.sc, v.sb, v.sx
      FROM (VALUES
        (sent_at, sign, 0, 0, 0, 0, 0, 0,
         sign * (delivered_at IS NOT NULL)::int, sign * (analytics_human_opened_at(opened_at, human_opened_at) IS NOT NULL)::int,
         sign * (clicked_at IS NOT NULL)::int, sign * (bounced_at IS NOT NULL)::int, sign * (complained_at IS NOT NULL)::int),
        (delivered_at, 0, sign, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0),
        (analytics_human_opened_at(opened_at, human_opened_at), 0, 0, sign, 0, 0, 0, 0, 0, 0, 0, 0, 0),
        (opened_at, 0, 0, 0, sign, 0, 0, 0, 0, 0, 0, 0, 0),
        (clicked_at, 0, 0, 0, 0, sign, 0, 0, 0, 0, 0, 0, 0),
        (bounced_at, 0, 0, 0, 0, 0, sign, 0, 0, 0, 0, 0, 0),
        (complained_at, 0, 0, 0, 0, 0, 0, sign, 0, 0, 0, 0, 0)
      ) AS v(at, s, d, o, oa, c, b, x, sd, so, sc, sb, sx)
      WHERE v.at IS NOT NULL
    $$`.execute(db);

  // Row trigger on UPDATE: the new row's contribution minus the old row's. Fast path (delivery,
  // opens, clicks, notifications: milestones only newly set, all at one time): one or two
  // single-row upserts. Anything else (a milestone moved or cleared): the generic delta query.
  await sql`
    CREATE FUNCTION analytics_email_update() RETURNS trigger LANGUAGE plpgsql AS $$
    DECLARE
      my_shard smallint := pg_backend_pid() % 8;
      h_old timestamptz := analytics_human_opened_at(OLD.opened_at, OLD.human_opened_at);
      h_new timestamptz := analytics_human_opened_at(NEW.opened_at, NEW.human_opened_at);
      -- 1 when the milestone went from NULL to a time in this update.
      ns int := (OLD.sent_at IS NULL AND NEW.sent_at IS NOT NULL)::int;
      nd int := (OLD.delivered_at IS NULL AND NEW.delivered_at IS NOT NULL)::int;
      nh int := (h_old IS NULL AND h_new IS NOT NULL)::int;
      na int := (OLD.opened_at IS NULL AND NEW.opened_at IS NOT NULL)::int;
      nc int := (OLD.clicked_at IS NULL AND NEW.clicked_at IS NOT NULL)::int;
      nb int := (OLD.bounced_at IS NULL AND NEW.bounced_at IS NOT NULL)::int;
      nx int := (OLD.complained_at IS NULL AND NEW.complained_at IS NOT NULL)::int;
      t timestamptz;
      b timestamptz;
      c timestamptz;
      sd int; so int; sc int; sb int; sx int;
      ds integer; dd integer; dopen integer; dc integer; dbn integer; dx integer;
    BEGIN
      t := coalesce(CASE WHEN ns = 1 THEN NEW.sent_at END, CASE WHEN nd = 1 THEN NEW.delivered_at END, CASE WHEN nh = 1 THEN h_new END,
                    CASE WHEN na = 1 THEN NEW.opened_at END, CASE WHEN nc = 1 THEN NEW.clicked_at END,
                    CASE WHEN nb = 1 THEN NEW.bounced_at END, CASE WHEN nx = 1 THEN NEW.complained_at END);
      b := analytics_bucket(t);
      IF t IS NOT NULL
         AND (ns = 1 OR NEW.sent_at IS NOT DISTINCT FROM OLD.sent_at) AND (nd = 1 OR NEW.delivered_at IS NOT DISTINCT FROM OLD.delivered_at)
         AND (nh = 1 OR h_new IS NOT DISTINCT FROM h_old) AND (na = 1 OR NEW.opened_at IS NOT DISTINCT FROM OLD.opened_at)
         AND (nc = 1 OR NEW.clicked_at IS NOT DISTINCT FROM OLD.clicked_at) AND (nb = 1 OR NEW.bounced_at IS NOT DISTINCT FROM OLD.bounced_at)
         AND (nx = 1 OR NEW.complained_at IS NOT DISTINCT FROM OLD.complained_at)
         AND (ns = 0 OR analytics_bucket(NEW.sent_at) = b) AND (nd = 0 OR analytics_bucket(NEW.delivered_at) = b)
         AND (nh = 0 OR analytics_bucket(h_new) = b) AND (na = 0 OR analytics_bucket(NEW.opened_at) = b)
         AND (nc = 0 OR analytics_bucket(NEW.clicked_at) = b) AND (nb = 0 OR analytics_bucket(NEW.bounced_at) = b)
         AND (nx = 0 OR analytics_bucket(NEW.complained_at) = b)
      THEN
        -- Of the email's sending bucket: every milestone it has when it is newly sent, else the new ones.
        IF NEW.sent_at IS NULL THEN
          sd := 0; so := 0; sc := 0; sb := 0; sx := 0;
        ELSIF ns = 1 THEN
          sd := (NEW.delivered_at IS NOT NULL)::int; so := (h_new IS NOT NULL)::int; sc := (NEW.clicked_at IS NOT NULL)::int;
          sb := (NEW.bounced_at IS NOT NULL)::int; sx := (NEW.complained_at IS NOT NULL)::int;
        ELSE
          sd := nd; so := nh; sc := nc; sb := nb; sx := nx;
        END IF;
        c := analytics_bucket(NEW.sent_at);
        IF c IS NOT DISTINCT FROM b OR (sd + so + sc + sb + sx) = 0 THEN
          IF c IS DISTINCT FROM b THEN sd := 0; so := 0; sc := 0; sb := 0; sx := 0; END IF;
          INSERT INTO analytics_email_counts AS x (project_id, bucket, shard, sent, delivered, opened, opened_any, clicked, bounced, complained,
                                                   sent_delivered, sent_opened, sent_clicked, sent_bounced, sent_complained)
          VALUES (NEW.project_id, b, my_shard, ns, nd, nh, na, nc, nb, nx, sd, so, sc, sb, sx)
          ON CONFLICT (project_id, bucket, shard) DO UPDATE SET
            sent = x.sent + excluded.sent, delivered = x.delivered + excluded.delivered, opened = x.opened + excluded.opened,
            opened_any = x.opened_any + excluded.opened_any, clicked = x.clicked + excluded.clicked, bounced = x.bounced + excluded.bounced,
            complained = x.complained + excluded.complained, sent_delivered = x.sent_delivered + excluded.sent_delivered,
            sent_opened = x.sent_opened + excluded.sent_opened, sent_clicked = x.sent_clicked + excluded.sent_clicked,
            sent_bounced = x.sent_bounced + excluded.sent_bounced, sent_complained = x.sent_complained + excluded.sent_complained;
        ELSE
          -- Two buckets (ordered, as every writer of this table does): the event's and the sending's.
          INSERT INTO analytics_email_counts AS x (project_id, bucket, shard, sent, delivered, opened, opened_any, clicked, bounced, complained,
                                                   sent_delivered, sent_opened, sent_clicked, sent_bounced, sent_complained)
          VALUES (NEW.project_id, b, my_shard, ns, nd, nh, na, nc, nb, nx, 0, 0, 0, 0, 0),
                 (NEW.project_id, c, my_shard, 0, 0, 0, 0, 0, 0, 0, sd, so, sc, sb, sx)
          ORDER BY 2
          ON CONFLICT (project_id, bucket, shard) DO UPDATE SET
            sent = x.sent + excluded.sent, delivered = x.delivered + excluded.delivered, opened = x.opened + excluded.opened,
            opened_any = x.opened_any + excluded.opened_any, clicked = x.clicked + excluded.clicked, bounced = x.bounced + excluded.bounced,
            complained = x.complained + excluded.complained, sent_delivered = x.sent_delivered + excluded.sent_delivered,
            sent_opened = x.sent_opened + excluded.sent_opened, sent_clicked = x.sent_clicked + excluded.sent_clicked,
            sent_bounced = x.sent_bounced + excluded.sent_bounced, sent_complained = x.sent_complained + excluded.sent_complained;
        END IF;
      ELSE
        INSERT INTO analytics_email_counts AS x (project_id, bucket, shard, sent, delivered, opened, opened_any, clicked, bounced,
                                                 complained, sent_delivered, sent_opened, sent_clicked, sent_bounced, sent_complained)
        SELECT NEW.project_id, r.bucket, my_shard, sum(r.sent), sum(r.delivered), sum(r.opened), sum(r.opened_any), sum(r.clicked),
               sum(r.bounced), sum(r.complained), sum(r.sent_delivered), sum(r.sent_opened), sum(r.sent_clicked), sum(r.sent_bounced),
               sum(r.sent_complained)
        FROM (
          SELECT * FROM analytics_email_rows(1, NEW.sent_at, NEW.delivered_at, NEW.opened_at, NEW.human_opened_at, NEW.clicked_at,
                                             NEW.bounced_at, NEW.complained_at)
          UNION ALL
          SELECT * FROM analytics_email_rows(-1, OLD.sent_at, OLD.delivered_at, OLD.opened_at, OLD.human_opened_at, OLD.clicked_at,
                                             OLD.bounced_at, OLD.complained_at)
        ) r
        GROUP BY r.bucket
        HAVING (sum(r.sent) <> 0 OR sum(r.delivered) <> 0 OR sum(r.opened) <> 0 OR sum(r.opened_any) <> 0 OR sum(r.clicked) <> 0
                OR sum(r.bounced) <> 0 OR sum(r.complained) <> 0 OR sum(r.sent_delivered) <> 0 OR sum(r.sent_opened) <> 0
                OR sum(r.sent_clicked) <> 0 OR sum(r.sent_bounced) <> 0 OR sum(r.sent_complained) <> 0)
        ORDER BY r.bucket
        ON CONFLICT (project_id, bucket, shard) DO UPDATE SET
          sent = x.sent + excluded.sent, delivered = x.delivered + excluded.delivered, opened = x.opened + excluded.opened,
          opened_any = x.opened_any + excluded.opened_any, clicked = x.clicked + excluded.clicked,
          bounced = x.bounced + excluded.bounced, complained = x.complained + excluded.complained,
          sent_delivered = x.sent_delivered + excluded.sent_delivered, sent_opened = x.sent_opened + excluded.sent_opened,
          sent_clicked = x.sent_clicked + excluded.sent_clicked, sent_bounced = x.sent_bounced + excluded.sent_bounced,
          sent_complained = x.sent_complained + excluded.sent_complained;
      END IF;

      IF NEW.campaign_id IS NOT NULL AND NEW.campaign_id IS NOT DISTINCT FROM OLD.campaign_id THEN
        ds := (NEW.sent_at IS NOT NULL)::int - (OLD.sent_at IS NOT NULL)::int;
        dd := (NEW.delivered_at IS NOT NULL)::int - (OLD.delivered_at IS NOT NULL)::int;
        dopen := (h_new IS NOT NULL)::int - (h_old IS NOT NULL)::int;
        dc := (NEW.clicked_at IS NOT NULL)::int - (OLD.clicked_at IS NOT NULL)::int;
        dbn := (NEW.bounced_at IS NOT NULL)::int - (OLD.bounced_at IS NOT NULL)::int;
        dx := (NEW.complained_at IS NOT NULL)::int - (OLD.complained_at IS NOT NULL)::int;
        IF ds <> 0 OR dd <> 0 OR dopen <> 0 OR dc <> 0 OR dbn <> 0 OR dx <> 0 THEN
          INSERT INTO analytics_campaign_counts AS x (project_id, campaign_id, shard, sent, delivered, opened, clicked, bounced, complained)
          VALUES (NEW.project_id, NEW.campaign_id, my_shard, ds, dd, dopen, dc, dbn, dx)
          ON CONFLICT (project_id, campaign_id, shard) DO UPDATE SET
            sent = x.sent + excluded.sent, delivered = x.delivered + excluded.delivered, opened = x.opened + excluded.opened,
            clicked = x.clicked + excluded.clicked, bounced = x.bounced + excluded.bounced, complained = x.complained + excluded.complained;
        END IF;
      END IF;
      RETURN NULL;
    END $$`.execute(db);

  // Statement trigger on INSERT: the inserted rows' contributions, one aggregated upsert per table.
  await sql`
    CREATE FUNCTION analytics_email_insert() RETURNS trigger LANGUAGE plpgsql AS $$
    DECLARE
      my_shard smallint := pg_backend_pid() % 8;
    BEGIN
      -- Every send path inserts PENDING rows: nothing to count, leave at once.
      IF NOT EXISTS (SELECT 1 FROM new_emails n WHERE n.project_id IS NOT NULL AND (n.sent_at IS NOT NULL OR n.delivered_at IS NOT NULL
                     OR n.opened_at IS NOT NULL OR n.clicked_at IS NOT NULL OR n.bounced_at IS NOT NULL OR n.complained_at IS NOT NULL)) THEN
        RETURN NULL;
      END IF;
      INSERT INTO analytics_email_counts AS t (project_id, bucket, shard, sent, delivered, opened, opened_any, clicked, bounced,
                                               complained, sent_delivered, sent_opened, sent_clicked, sent_bounced, sent_complained)
      SELECT n.project_id, r.bucket, my_shard, sum(r.sent), sum(r.delivered), sum(r.opened), sum(r.opened_any), sum(r.clicked),
             sum(r.bounced), sum(r.complained), sum(r.sent_delivered), sum(r.sent_opened), sum(r.sent_clicked), sum(r.sent_bounced),
             sum(r.sent_complained)
      FROM new_emails n
      CROSS JOIN LATERAL analytics_email_rows(1, n.sent_at, n.delivered_at, n.opened_at, n.human_opened_at, n.clicked_at,
                                              n.bounced_at, n.complained_at) r
      WHERE n.project_id IS NOT NULL
      GROUP BY n.project_id, r.bucket
      ORDER BY n.project_id, r.bucket
      ON CONFLICT (project_id, bucket, shard) DO UPDATE SET
        sent = t.sent + excluded.sent, delivered = t.delivered + excluded.delivered, opened = t.opened + excluded.opened,
        opened_any = t.opened_any + excluded.opened_any, clicked = t.clicked + excluded.clicked,
        bounced = t.bounced + excluded.bounced, complained = t.complained + excluded.complained,
        sent_delivered = t.sent_delivered + excluded.sent_delivered, sent_opened = t.sent_opened + excluded.sent_opened,
        sent_clicked = t.sent_clicked + excluded.sent_clicked, sent_bounced = t.sent_bounced + excluded.sent_bounced,
        sent_complained = t.sent_complained + excluded.sent_complained;

      INSERT INTO analytics_campaign_counts AS t (project_id, campaign_id, shard, sent, delivered, opened, clicked, bounced, complained)
      SELECT n.project_id, n.campaign_id, my_shard, count(n.sent_at), count(n.delivered_at),
             count(analytics_human_opened_at(n.opened_at, n.human_opened_at)), count(n.clicked_at), count(n.bounced_at),
             count(n.complained_at)
      FROM new_emails n
      WHERE n.project_id IS NOT NULL AND n.campaign_id IS NOT NULL
        AND (n.sent_at IS NOT NULL OR n.delivered_at IS NOT NULL OR n.opened_at IS NOT NULL OR n.clicked_at IS NOT NULL
             OR n.bounced_at IS NOT NULL OR n.complained_at IS NOT NULL)
      GROUP BY n.project_id, n.campaign_id
      ORDER BY n.project_id, n.campaign_id
      ON CONFLICT (project_id, campaign_id, shard) DO UPDATE SET
        sent = t.sent + excluded.sent, delivered = t.delivered + excluded.delivered, opened = t.opened + excluded.opened,
        clicked = t.clicked + excluded.clicked, bounced = t.bounced + excluded.bounced, complained = t.complained + excluded.complained;
      RETURN NULL;
    END $$`.execute(db);

  // Statement trigger on INSERT into events: tracked names only, one upsert per table per statement.
  await sql`
    CREATE FUNCTION analytics_event_insert() RETURNS trigger LANGUAGE plpgsql AS $$
    DECLARE
      my_shard smallint := pg_backend_pid() % 8;
    BEGIN
      -- The delivery path inserts one email.* event per milestone: nothing to count, leave at once.
      IF NOT EXISTS (SELECT 1 FROM new_events e WHERE NOT analytics_is_system_event(e.name)) THEN
        RETURN NULL;
      END IF;
      WITH counted AS MATERIALIZED (
        SELECT e.project_id, analytics_bucket(e.created_at) AS bucket, e.name, count(*)::int AS n
        FROM new_events e
        WHERE NOT analytics_is_system_event(e.name)
        GROUP BY 1, 2, 3
      ),
      fine AS (
        INSERT INTO analytics_event_counts AS t (project_id, bucket, name, shard, count)
        SELECT project_id, bucket, name, my_shard, n FROM counted ORDER BY project_id, bucket, name
        ON CONFLICT (project_id, bucket, name, shard) DO UPDATE SET count = t.count + excluded.count
      )
      INSERT INTO analytics_event_daily AS t (project_id, day, name, shard, count)
      SELECT project_id, (bucket AT TIME ZONE 'UTC')::date, name, my_shard, sum(n) FROM counted
      GROUP BY 1, 2, 3 ORDER BY 1, 2, 3
      ON CONFLICT (project_id, day, name, shard) DO UPDATE SET count = t.count + excluded.count;
      RETURN NULL;
    END $$`.execute(db);

  // Existing rows, in this transaction: the triggers below take over from here.
  await sql`
    INSERT INTO analytics_email_counts (project_id, bucket, shard, sent, delivered, opened, opened_any, clicked, bounced, complained,
                                        sent_delivered, sent_opened, sent_clicked, sent_bounced, sent_complained)
    SELECT e.project_id, r.bucket, 0, sum(r.sent), sum(r.delivered), sum(r.opened), sum(r.opened_any), sum(r.clicked), sum(r.bounced),
           sum(r.complained), sum(r.sent_delivered), sum(r.sent_opened), sum(r.sent_clicked), sum(r.sent_bounced), sum(r.sent_complained)
    FROM emails e
    CROSS JOIN LATERAL analytics_email_rows(1, e.sent_at, e.delivered_at, e.opened_at, e.human_opened_at, e.clicked_at,
                                            e.bounced_at, e.complained_at) r
    WHERE e.project_id IS NOT NULL
    GROUP BY e.project_id, r.bucket`.execute(db);
  await sql`
    INSERT INTO analytics_campaign_counts (project_id, campaign_id, shard, sent, delivered, opened, clicked, bounced, complained)
    SELECT e.project_id, e.campaign_id, 0, count(e.sent_at), count(e.delivered_at),
           count(analytics_human_opened_at(e.opened_at, e.human_opened_at)), count(e.clicked_at), count(e.bounced_at), count(e.complained_at)
    FROM emails e
    WHERE e.project_id IS NOT NULL AND e.campaign_id IS NOT NULL
    GROUP BY e.project_id, e.campaign_id`.execute(db);
  await sql`
    INSERT INTO analytics_event_counts (project_id, bucket, name, shard, count)
    SELECT project_id, analytics_bucket(created_at), name, 0, count(*)
    FROM events WHERE NOT analytics_is_system_event(name)
    GROUP BY 1, 2, 3`.execute(db);
  await sql`
    INSERT INTO analytics_event_daily (project_id, day, name, shard, count)
    SELECT project_id, (bucket AT TIME ZONE 'UTC')::date, name, 0, sum(count)
    FROM analytics_event_counts
    GROUP BY 1, 2, 3`.execute(db);

  await sql`
    CREATE TRIGGER analytics_emails_insert AFTER INSERT ON emails REFERENCING NEW TABLE AS new_emails
    FOR EACH STATEMENT EXECUTE FUNCTION analytics_email_insert()`.execute(db);
  await sql`
    CREATE TRIGGER analytics_emails_update
    AFTER UPDATE OF sent_at, delivered_at, opened_at, human_opened_at, clicked_at, bounced_at, complained_at ON emails
    FOR EACH ROW
    WHEN (NEW.project_id IS NOT NULL AND (
          OLD.sent_at IS DISTINCT FROM NEW.sent_at OR OLD.delivered_at IS DISTINCT FROM NEW.delivered_at
       OR OLD.opened_at IS DISTINCT FROM NEW.opened_at OR OLD.human_opened_at IS DISTINCT FROM NEW.human_opened_at
       OR OLD.clicked_at IS DISTINCT FROM NEW.clicked_at OR OLD.bounced_at IS DISTINCT FROM NEW.bounced_at
       OR OLD.complained_at IS DISTINCT FROM NEW.complained_at))
    EXECUTE FUNCTION analytics_email_update()`.execute(db);
  await sql`
    CREATE TRIGGER analytics_events_insert AFTER INSERT ON events REFERENCING NEW TABLE AS new_events
    FOR EACH STATEMENT EXECUTE FUNCTION analytics_event_insert()`.execute(db);
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await sql`DROP TRIGGER analytics_events_insert ON events`.execute(db);
  await sql`DROP TRIGGER analytics_emails_update ON emails`.execute(db);
  await sql`DROP TRIGGER analytics_emails_insert ON emails`.execute(db);
  await sql`DROP FUNCTION analytics_event_insert(), analytics_email_insert(), analytics_email_update()`.execute(db);
  await sql`DROP TABLE analytics_event_daily, analytics_event_counts, analytics_campaign_counts, analytics_email_counts`.execute(db);
  await sql`DROP FUNCTION analytics_email_rows(integer, timestamptz, timestamptz, timestamptz, timestamptz, timestamptz, timestamptz, timestamptz)`.execute(db);
  await sql`DROP FUNCTION analytics_is_system_event(text), analytics_bucket(timestamptz), analytics_human_opened_at(timestamptz, timestamptz)`.execute(db);
  await sql`ALTER TABLE emails DROP COLUMN human_opened_at, DROP COLUMN machine_open_count`.execute(db);
}
