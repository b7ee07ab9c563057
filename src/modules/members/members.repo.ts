import type { Kysely, Transaction } from 'kysely';
import type { Database, ProjectRole } from '../../db/schema.js';
import type { Member } from './members.schema.js';
import type { MemberRole } from './members.rules.js';

type Db = Kysely<Database> | Transaction<Database>;

/**
 * Every membership of the project, locked until the transaction ends: each change of members,
 * roles or invitations of one project runs after the previous one commits, so rules that count
 * (the last OWNER, the pending-invitation cap) see the committed state, races included.
 */
export async function lockMemberships(trx: Transaction<Database>, projectId: string): Promise<MemberRole[]> {
  return trx.selectFrom('memberships').select(['user_id', 'role']).where('project_id', '=', projectId).forUpdate().execute();
}

const rowToMember = (r: { user_id: string; email: string; role: ProjectRole; created_at: Date }): Member => ({
  userId: r.user_id,
  email: r.email,
  role: r.role,
  createdAt: r.created_at.toISOString(),
});

const members = (db: Db, projectId: string) =>
  db
    .selectFrom('memberships as m')
    .innerJoin('users as u', 'u.id', 'm.user_id')
    .select(['m.user_id', 'u.email', 'm.role', 'm.created_at'])
    .where('m.project_id', '=', projectId);

export async function listMembers(db: Db, projectId: string): Promise<Member[]> {
  const rows = await members(db, projectId).orderBy('m.created_at').orderBy('m.user_id').execute();
  return rows.map(rowToMember);
}

/** The account of an address (users.email is stored lower-case), if any. */
export async function findUserIdByEmail(db: Db, email: string): Promise<string | undefined> {
  const row = await db.selectFrom('users').select('id').where('email', '=', email).executeTakeFirst();
  return row?.id;
}

export async function findUserEmail(db: Db, userId: string): Promise<string | undefined> {
  const row = await db.selectFrom('users').select('email').where('id', '=', userId).executeTakeFirst();
  return row?.email;
}

export async function findMemberRole(db: Db, projectId: string, userId: string): Promise<ProjectRole | undefined> {
  const row = await db.selectFrom('memberships').select('role').where('project_id', '=', projectId).where('user_id', '=', userId).executeTakeFirst();
  return row?.role;
}

/** The project's name and the inviter's address, for the invitation email. */
export async function findInviteContext(db: Db, projectId: string, userId: string): Promise<{ projectName: string; inviterEmail: string } | undefined> {
  const row = await db
    .selectFrom('projects as p')
    .innerJoin('users as u', (join) => join.on('u.id', '=', userId))
    .select(['p.name', 'u.email'])
    .where('p.id', '=', projectId)
    .executeTakeFirst();
  return row && { projectName: row.name, inviterEmail: row.email };
}

export async function insertMember(trx: Transaction<Database>, input: { projectId: string; userId: string; role: ProjectRole }): Promise<Member> {
  await trx.insertInto('memberships').values({ project_id: input.projectId, user_id: input.userId, role: input.role }).execute();
  return rowToMember(await members(trx, input.projectId).where('m.user_id', '=', input.userId).executeTakeFirstOrThrow());
}

export async function updateMemberRole(trx: Transaction<Database>, input: { projectId: string; userId: string; role: ProjectRole }): Promise<Member> {
  const row = await trx
    .updateTable('memberships as m')
    .from('users as u')
    .set({ role: input.role })
    .whereRef('u.id', '=', 'm.user_id')
    .where('m.project_id', '=', input.projectId)
    .where('m.user_id', '=', input.userId)
    .returning(['m.user_id', 'u.email', 'm.role', 'm.created_at'])
    .executeTakeFirstOrThrow();
  return rowToMember(row);
}

export async function deleteMember(trx: Transaction<Database>, projectId: string, userId: string): Promise<void> {
  await trx.deleteFrom('memberships').where('project_id', '=', projectId).where('user_id', '=', userId).execute();
}
