import { type Kysely, sql } from 'kysely';

/**
 * API processes cache API key → project lookups (src/http/key-cache.ts). Every change that
 * decides what a key may do (its keys rotated, the project disabled or re-enabled, tracking
 * switched, the project deleted) notifies `project_auth` with the project id at commit, whoever
 * made it (API, worker, admin CLI), so every process drops that project's entries.
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await sql`
    CREATE FUNCTION notify_project_auth() RETURNS trigger AS $$
    BEGIN
      PERFORM pg_notify('project_auth', OLD.id::text);
      RETURN NULL;
    END
    $$ LANGUAGE plpgsql`.execute(db);
  await sql`
    CREATE TRIGGER projects_auth_changed
    AFTER UPDATE OF public_key, secret_key, disabled, disabled_reason, tracking ON projects
    FOR EACH ROW
    WHEN (OLD.public_key IS DISTINCT FROM NEW.public_key OR OLD.secret_key IS DISTINCT FROM NEW.secret_key
          OR OLD.disabled IS DISTINCT FROM NEW.disabled OR OLD.disabled_reason IS DISTINCT FROM NEW.disabled_reason
          OR OLD.tracking IS DISTINCT FROM NEW.tracking)
    EXECUTE FUNCTION notify_project_auth()`.execute(db);
  await sql`CREATE TRIGGER projects_auth_deleted AFTER DELETE ON projects FOR EACH ROW EXECUTE FUNCTION notify_project_auth()`.execute(db);
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await sql`DROP TRIGGER projects_auth_deleted ON projects`.execute(db);
  await sql`DROP TRIGGER projects_auth_changed ON projects`.execute(db);
  await sql`DROP FUNCTION notify_project_auth()`.execute(db);
}
