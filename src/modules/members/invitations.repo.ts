import { type Kysely, sql, type Transaction } from 'kysely';
import type { Database, InvitationStatus, ProjectRole } from '../../db/schema.js';
import { isUuid } from '../../lib/uuid.js';
import { InviteLimits } from './members.rules.js';
import type { Invitation } from './members.schema.js';

type Db = Kysely<Database> | Transaction<Database>;

const invitationsOf = (db: Db) =>
  db
    .selectFrom('project_invitations as i')
    .leftJoin('users as u', 'u.id', 'i.invited_by')
    .select(['i.id', 'i.email', 'i.role', 'i.invited_by', 'u.email as inviter_email', 'i.expires_at', 'i.created_at']);

type InvitationRow = {
  id: string;
  email: string;
  role: ProjectRole;
  invited_by: string | null;
  inviter_email: string | null;
  expires_at: Date;
  created_at: Date;
};

const rowToInvitation = (r: InvitationRow): Invitation => ({
  id: r.id,
  email: r.email,
  role: r.role,
  invitedBy: r.invited_by && r.inviter_email ? { userId: r.invited_by, email: r.inviter_email } : null,
  expiresAt: r.expires_at.toISOString(),
  createdAt: r.created_at.toISOString(),
});

/** The project's live invitations (pending, not expired), newest first. */
export async function listPendingInvitations(db: Db, projectId: string): Promise<Invitation[]> {
  const rows = await invitationsOf(db)
    .where('i.project_id', '=', projectId)
    .where('i.status', '=', 'PENDING')
    .where('i.expires_at', '>', sql<Date>`now()`)
    .orderBy('i.created_at', 'desc')
    .execute();
  return rows.map(rowToInvitation);
}

export interface InviteCounts {
  /** Invites of the project in the last hour, and when the oldest of them leaves that window. */
  projectRecent: number;
  projectWindowFreesAt: Date | null;
  /** Invites by the inviter (all projects) in the last 24 hours, and when the oldest leaves. */
  inviterRecent: number;
  inviterWindowFreesAt: Date | null;
  /** Live pending invitations of the project other than one to `email` (a re-invite replaces it). */
  pendingOthers: number;
}

/** The counts the abuse limits need, in one statement (each an index range). */
export async function countInvites(trx: Transaction<Database>, input: { projectId: string; inviterId: string; email: string }): Promise<InviteCounts> {
  const { rows } = await sql<{ project_recent: string; project_oldest: Date | null; inviter_recent: string; inviter_oldest: Date | null; pending_others: string }>`
    SELECT p.n AS project_recent, p.oldest AS project_oldest, u.n AS inviter_recent, u.oldest AS inviter_oldest,
      (SELECT count(*) FROM project_invitations
        WHERE project_id = ${input.projectId} AND status = 'PENDING' AND expires_at > now() AND email <> ${input.email}) AS pending_others
    FROM (SELECT count(*) AS n, min(created_at) AS oldest FROM project_invitations
           WHERE project_id = ${input.projectId} AND created_at > now() - interval '1 hour') p,
         (SELECT count(*) AS n, min(created_at) AS oldest FROM project_invitations
           WHERE invited_by = ${input.inviterId} AND created_at > now() - interval '24 hours') u`.execute(trx);
  const row = rows[0];
  if (!row) throw new Error('countInvites: no row');
  const plus = (d: Date | null, ms: number) => (d ? new Date(d.getTime() + ms) : null);
  return {
    projectRecent: Number(row.project_recent),
    projectWindowFreesAt: plus(row.project_oldest, 3_600_000),
    inviterRecent: Number(row.inviter_recent),
    inviterWindowFreesAt: plus(row.inviter_oldest, 86_400_000),
    pendingOthers: Number(row.pending_others),
  };
}

/** Closes the project's pending invitation to `email`, if any (replaced by a new invite, or the address joined). */
export async function closePendingInvitationTo(trx: Transaction<Database>, projectId: string, email: string): Promise<void> {
  await trx
    .updateTable('project_invitations')
    .set({ status: 'REVOKED', closed_at: sql<Date>`now()` })
    .where('project_id', '=', projectId)
    .where('email', '=', email)
    .where('status', '=', 'PENDING')
    .execute();
}

/** Records an invite: PENDING with its token's hash, or ADDED (an existing user joined at once). */
export async function insertInvitation(
  trx: Transaction<Database>,
  input: { projectId: string; email: string; role: ProjectRole; status: Extract<InvitationStatus, 'PENDING' | 'ADDED'>; tokenHash: Buffer | null; invitedBy: string; acceptedBy?: string },
): Promise<Invitation> {
  const { id } = await trx
    .insertInto('project_invitations')
    .values({
      project_id: input.projectId,
      email: input.email,
      role: input.role,
      status: input.status,
      token_hash: input.tokenHash,
      invited_by: input.invitedBy,
      accepted_by: input.acceptedBy ?? null,
      expires_at: sql<Date>`now() + make_interval(days => ${InviteLimits.validDays})`,
      closed_at: input.status === 'ADDED' ? sql<Date>`now()` : null,
    })
    .returning('id')
    .executeTakeFirstOrThrow();
  return rowToInvitation(await invitationsOf(trx).where('i.id', '=', id).executeTakeFirstOrThrow());
}

/** The pending invitation `invitationId` of the project, locked (revocation). */
export async function lockPendingInvitation(trx: Transaction<Database>, projectId: string, invitationId: string): Promise<{ id: string; role: ProjectRole } | undefined> {
  if (!isUuid(invitationId)) return undefined;
  return trx
    .selectFrom('project_invitations')
    .select(['id', 'role'])
    .where('id', '=', invitationId)
    .where('project_id', '=', projectId)
    .where('status', '=', 'PENDING')
    .where('expires_at', '>', sql<Date>`now()`)
    .forUpdate()
    .executeTakeFirst();
}

export async function revokeInvitation(trx: Transaction<Database>, invitationId: string): Promise<void> {
  await trx.updateTable('project_invitations').set({ status: 'REVOKED', closed_at: sql<Date>`now()` }).where('id', '=', invitationId).execute();
}

/** An invitation by its token's hash, locked, whatever its state (the caller tells the states apart). */
export async function lockInvitationByToken(
  trx: Transaction<Database>,
  tokenHash: Buffer,
): Promise<{ id: string; project_id: string; project_name: string; email: string; role: ProjectRole; status: InvitationStatus; accepted_by: string | null; expired: boolean } | undefined> {
  return trx
    .selectFrom('project_invitations as i')
    .innerJoin('projects as p', 'p.id', 'i.project_id')
    .select(['i.id', 'i.project_id', 'p.name as project_name', 'i.email', 'i.role', 'i.status', 'i.accepted_by', sql<boolean>`i.expires_at <= now()`.as('expired')])
    .where('i.token_hash', '=', tokenHash)
    .forUpdate('i')
    .executeTakeFirst();
}

/** A live pending invitation by its token's hash, as its landing page shows it. */
export async function findLiveInvitationByToken(
  db: Db,
  tokenHash: Buffer,
): Promise<{ email: string; project_name: string; role: ProjectRole; inviter_email: string | null; expires_at: Date } | undefined> {
  return db
    .selectFrom('project_invitations as i')
    .innerJoin('projects as p', 'p.id', 'i.project_id')
    .leftJoin('users as u', 'u.id', 'i.invited_by')
    .select(['i.email', 'p.name as project_name', 'i.role', 'u.email as inviter_email', 'i.expires_at'])
    .where('i.token_hash', '=', tokenHash)
    .where('i.status', '=', 'PENDING')
    .where('i.expires_at', '>', sql<Date>`now()`)
    .executeTakeFirst();
}

/**
 * Accepts invitations in one statement: closes them as ACCEPTED by `userId` and inserts the
 * memberships (an existing membership keeps its role). `ids` limits it to those invitations;
 * otherwise every live pending invitation to `email`. Returns the projects joined.
 */
export async function acceptInvitations(db: Db, input: { userId: string; email: string; ids?: readonly string[] }): Promise<{ projectId: string; role: ProjectRole }[]> {
  const only = input.ids ? sql`AND id = ANY(${input.ids}::uuid[])` : sql``;
  const { rows } = await sql<{ project_id: string; role: ProjectRole }>`
    WITH accepted AS (
      UPDATE project_invitations SET status = 'ACCEPTED', accepted_by = ${input.userId}, closed_at = now()
      WHERE email = ${input.email} AND status = 'PENDING' AND expires_at > now() ${only}
      RETURNING project_id, role
    ), joined AS (
      INSERT INTO memberships (project_id, user_id, role)
      SELECT project_id, ${input.userId}, role FROM accepted
      ON CONFLICT (project_id, user_id) DO NOTHING
      RETURNING project_id, role
    )
    SELECT project_id, role FROM joined`.execute(db);
  return rows.map((r) => ({ projectId: r.project_id, role: r.role }));
}
