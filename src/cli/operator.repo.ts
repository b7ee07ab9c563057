import { type Kysely, sql } from 'kysely';
import { type Database, INSTANCE_PROJECT_ID } from '../db/schema.js';

// Operator-only SQL over projects. It may move to modules/projects/projects.repo.ts once the
// API needs it too (an admin dashboard); until then the CLI is its only caller.

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
