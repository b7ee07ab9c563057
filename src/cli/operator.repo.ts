import { type Kysely, sql } from 'kysely';
import type { Database, ProjectRow } from '../db/schema.js';
import { isUuid } from '../lib/uuid.js';
import { enqueueProjectCancel } from '../modules/workflows/index.js';

// Operator-only SQL over projects. It may move to modules/projects/projects.repo.ts once the
// API needs it too (an admin dashboard); until then the CLI is its only caller.

/**
 * Sets projects.disabled (a disabled project answers 403 PROJECT_DISABLED); undefined when there
 * is no such project. Disabling also queues the cancellation of its workflow executions.
 */
export async function setProjectDisabled(
  db: Kysely<Database>,
  projectId: string,
  disabled: boolean,
): Promise<ProjectRow | undefined> {
  if (!isUuid(projectId)) return undefined;
  return db.transaction().execute(async (trx) => {
    const project = await trx
      .updateTable('projects')
      .set({
        disabled,
        disabled_reason: disabled ? 'disabled by an operator' : null,
        disabled_at: disabled ? sql`now()` : null,
        updated_at: sql`now()`,
      })
      .where('id', '=', projectId)
      .returningAll()
      .executeTakeFirst();
    if (project && disabled) await enqueueProjectCancel(trx, project.id);
    return project;
  });
}

export interface ProjectListing {
  id: string;
  name: string;
  disabled: boolean;
  ownerEmails: string[];
}

/** Every project with its owners' emails, oldest first; `memberId` keeps those that user belongs to. */
export async function listProjectsWithOwners(
  db: Kysely<Database>,
  opts: { memberId?: string } = {},
): Promise<ProjectListing[]> {
  let query = db
    .selectFrom('projects as p')
    .select([
      'p.id',
      'p.name',
      'p.disabled',
      sql<string[]>`ARRAY(
        SELECT u.email FROM memberships m JOIN users u ON u.id = m.user_id
        WHERE m.project_id = p.id AND m.role = 'OWNER' ORDER BY u.email
      )`.as('owner_emails'),
    ])
    .orderBy('p.created_at', 'asc')
    .orderBy('p.id', 'asc');
  const memberId = opts.memberId;
  if (memberId !== undefined) {
    query = query.where('p.id', 'in', db.selectFrom('memberships').select('project_id').where('user_id', '=', memberId));
  }
  const rows = await query.execute();
  return rows.map((row) => ({ id: row.id, name: row.name, disabled: row.disabled, ownerEmails: row.owner_emails }));
}
