import { type Kysely, type Migration, type MigrationProvider, Migrator } from 'kysely';
import { runMigrations as runWorkerMigrations } from 'graphile-worker';
import type pg from 'pg';
import * as m0001 from './migrations/0001_foundation.js';
import * as m0002 from './migrations/0002_contacts_events.js';
import * as m0003 from './migrations/0003_import_files.js';
import * as m0004 from './migrations/0004_sending.js';
import * as m0005 from './migrations/0005_segments_campaigns.js';
import * as m0006 from './migrations/0006_events_covering_index.js';
import * as m0007 from './migrations/0007_segment_counted_at.js';
import * as m0008 from './migrations/0008_worker_heartbeats.js';
import * as m0009 from './migrations/0009_outbox_subject.js';
import * as m0010 from './migrations/0010_segment_condition_changed_at.js';
import * as m0011 from './migrations/0011_campaign_status_reason.js';
import * as m0012 from './migrations/0012_email_delivery_stage.js';
import * as m0013 from './migrations/0013_login_throttle_sessions.js';
import * as m0014 from './migrations/0014_suppressions.js';
import * as m0015 from './migrations/0015_workflows.js';
import * as m0016 from './migrations/0016_workflow_enrolment.js';
import * as m0017 from './migrations/0017_workflow_events_priority.js';
import * as m0018 from './migrations/0018_workflow_event_queue.js';
import * as m0019 from './migrations/0019_workflow_enrolments.js';
import * as m0020 from './migrations/0020_workflow_trigger_skips_entered.js';
import type { Database } from './schema.js';

/** Every migration, in order. Add new files here: NNNN_name.ts. */
const migrations: Record<string, Migration> = {
  '0001_foundation': m0001,
  '0002_contacts_events': m0002,
  '0003_import_files': m0003,
  '0004_sending': m0004,
  '0005_segments_campaigns': m0005,
  '0006_events_covering_index': m0006,
  '0007_segment_counted_at': m0007,
  '0008_worker_heartbeats': m0008,
  '0009_outbox_subject': m0009,
  '0010_segment_condition_changed_at': m0010,
  '0011_campaign_status_reason': m0011,
  '0012_email_delivery_stage': m0012,
  '0013_login_throttle_sessions': m0013,
  '0014_suppressions': m0014,
  '0015_workflows': m0015,
  '0016_workflow_enrolment': m0016,
  '0017_workflow_events_priority': m0017,
  '0018_workflow_event_queue': m0018,
  '0019_workflow_enrolments': m0019,
  '0020_workflow_trigger_skips_entered': m0020,
};

const provider: MigrationProvider = { getMigrations: async () => migrations };

/**
 * Brings the schema up to date: our tables (kysely Migrator, which holds a lock so
 * concurrent starts are safe) and graphile-worker's own schema.
 */
export async function migrateToLatest(db: Kysely<Database>, pool: pg.Pool): Promise<void> {
  const migrator = new Migrator({ db, provider });
  const { error, results } = await migrator.migrateToLatest();
  const failed = results?.find((r) => r.status === 'Error');
  if (error || failed) {
    throw new Error(`migration ${failed?.migrationName ?? ''} failed`, { cause: error });
  }
  await runWorkerMigrations({ pgPool: pool });
}
