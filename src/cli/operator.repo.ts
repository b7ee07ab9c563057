import { type Kysely, sql } from 'kysely';
import { type Database, INSTANCE_PROJECT_ID, type ProjectRow } from '../db/schema.js';
import { findProjectById } from '../modules/projects/index.js';
import { liftProjectSuspension, suspendProject } from '../modules/security/index.js';

// Operator-only SQL over projects. It may move to modules/projects/projects.repo.ts once the
// API needs it too (an admin dashboard); until then the CLI is its only caller.

/**
 * The operator's disable and lift (src/modules/security): disabling records an OPERATOR
 * suspension (its queued mail and workflow executions are cancelled, its owners and admins
 * emailed); enabling lifts the open suspensions, recorded with `by`. Undefined when there is no
 * such project.
 */
export async function setProjectDisabled(
  db: Kysely<Database>,
  projectId: string,
  disabled: boolean,
  opts: { by?: string; reason?: string } = {},
): Promise<ProjectRow | undefined> {
  if (!(await findProjectById(db, projectId))) return undefined;
  if (!disabled) {
    const lifted = await liftProjectSuspension(db, { projectId, by: opts.by ?? 'operator' });
    if (!lifted) return undefined;
  } else {
    await db.transaction().execute(async (trx) => {
      await suspendProject(trx, { projectId, source: 'OPERATOR', reason: opts.reason ?? 'disabled by an operator' });
    });
  }
  return findProjectById(db, projectId);
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
    .where('p.id', '<>', INSTANCE_PROJECT_ID)
    .orderBy('p.created_at', 'asc')
    .orderBy('p.id', 'asc');
  const memberId = opts.memberId;
  if (memberId !== undefined) {
    query = query.where('p.id', 'in', db.selectFrom('memberships').select('project_id').where('user_id', '=', memberId));
  }
  const rows = await query.execute();
  return rows.map((row) => ({ id: row.id, name: row.name, disabled: row.disabled, ownerEmails: row.owner_emails }));
}
