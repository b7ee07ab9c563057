import { createHash, randomBytes } from 'node:crypto';
import type { Kysely, Transaction } from 'kysely';
import type { Database, ProjectRole } from '../../db/schema.js';
import { conflict, notFound } from '../../http/errors.js';
import { isUuid } from '../../lib/uuid.js';
import { queueSystemEmail } from '../emails/index.js';
import { invitationEmail } from './invitation-email.js';
import {
  closePendingInvitationTo,
  countInvites,
  insertInvitation,
  listPendingInvitations,
  lockPendingInvitation,
  revokeInvitation,
} from './invitations.repo.js';
import { deleteMember, findInviteContext, findUserIdByEmail, insertMember, listMembers, lockMemberships, updateMemberRole } from './members.repo.js';
import { assertMayChangeRole, assertMayGrant, assertMayRemove, InviteLimits, inviteRateExceeded, type MemberRole } from './members.rules.js';
import type { InviteResult, Member, MembersList } from './members.schema.js';

/** An emailed invitation token: 256 random bits, base64url; only its SHA-256 is stored. */
export const hashInvitationToken = (token: string): Buffer => createHash('sha256').update(token).digest();
const newInvitationToken = (): string => randomBytes(32).toString('base64url');

interface Actor {
  projectId: string;
  userId: string;
}

export async function listProjectMembers(db: Kysely<Database>, projectId: string): Promise<MembersList> {
  const [members, invitations] = await Promise.all([listMembers(db, projectId), listPendingInvitations(db, projectId)]);
  return { members, invitations };
}

/** Locks the project's memberships and finds the actor among them (gone meanwhile: 404, as for a stranger). */
async function lockWithActor(trx: Transaction<Database>, actor: Actor): Promise<{ members: MemberRole[]; me: MemberRole }> {
  const members = await lockMemberships(trx, actor.projectId);
  const me = members.find((m) => m.user_id === actor.userId);
  if (!me) throw notFound('Project');
  return { members, me };
}

function findTarget(members: readonly MemberRole[], userId: string): MemberRole {
  const target = isUuid(userId) ? members.find((m) => m.user_id === userId) : undefined;
  if (!target) throw notFound('Member');
  return target;
}

/** The invite rates (429); returns the project's other live pending invitations, for the cap. */
async function assertInviteRate(trx: Transaction<Database>, actor: Actor, email: string): Promise<number> {
  const counts = await countInvites(trx, { projectId: actor.projectId, inviterId: actor.userId, email });
  if (counts.projectRecent >= InviteLimits.perProjectPerHour && counts.projectWindowFreesAt) {
    throw inviteRateExceeded(`at most ${InviteLimits.perProjectPerHour} per project per hour`, counts.projectWindowFreesAt);
  }
  if (counts.inviterRecent >= InviteLimits.perInviterPerDay && counts.inviterWindowFreesAt) {
    throw inviteRateExceeded(`at most ${InviteLimits.perInviterPerDay} by one user per 24 hours`, counts.inviterWindowFreesAt);
  }
  return counts.pendingOthers;
}

/**
 * Invite `{email, role}` (DESIGN §4): an existing user joins at once; another address gets a
 * pending invitation (a re-invite replaces the pending one: new token, role and expiry) and its
 * email, queued in the same transaction.
 */
export async function inviteMember(
  db: Kysely<Database>,
  input: Actor & { email: string; role: ProjectRole; publicUrl: string },
): Promise<InviteResult> {
  const email = input.email.trim().toLowerCase();
  return db.transaction().execute(async (trx) => {
    const { members, me } = await lockWithActor(trx, input);
    assertMayGrant(me.role, input.role);
    const pendingOthers = await assertInviteRate(trx, input, email);
    const existing = await findUserIdByEmail(trx, email);
    if (existing) {
      if (members.some((m) => m.user_id === existing)) {
        throw conflict('This address is already a member of the project: change its role with PATCH /projects/:id/members/:userId', { userId: existing });
      }
      await closePendingInvitationTo(trx, input.projectId, email);
      await insertInvitation(trx, { projectId: input.projectId, email, role: input.role, status: 'ADDED', tokenHash: null, invitedBy: input.userId, acceptedBy: existing });
      return { status: 'ADDED', member: await insertMember(trx, { projectId: input.projectId, userId: existing, role: input.role }) };
    }
    if (pendingOthers >= InviteLimits.maxPending) {
      throw conflict(`The project has ${InviteLimits.maxPending} pending invitations: revoke some, or wait until they are accepted or expire`);
    }
    await closePendingInvitationTo(trx, input.projectId, email);
    const token = newInvitationToken();
    const invitation = await insertInvitation(trx, {
      projectId: input.projectId,
      email,
      role: input.role,
      status: 'PENDING',
      tokenHash: hashInvitationToken(token),
      invitedBy: input.userId,
    });
    const context = await findInviteContext(trx, input.projectId, input.userId);
    if (!context) throw notFound('Project');
    const mail = invitationEmail({
      to: email,
      projectName: context.projectName,
      inviterEmail: context.inviterEmail,
      role: input.role,
      link: `${input.publicUrl}/app/invitations?token=${token}`,
      expiresAt: new Date(invitation.expiresAt),
      host: new URL(input.publicUrl).host,
    });
    await queueSystemEmail(trx, { ...mail, kind: 'invitation', projectId: input.projectId });
    return { status: 'INVITED', invitation };
  });
}

/** PATCH a member's role: ownership transfer, demotion, the last-OWNER and own-role rules (members.rules.ts). */
export async function changeMemberRole(db: Kysely<Database>, input: Actor & { targetId: string; role: ProjectRole }): Promise<Member> {
  return db.transaction().execute(async (trx) => {
    const { members, me } = await lockWithActor(trx, input);
    const target = findTarget(members, input.targetId);
    assertMayChangeRole(members, me, target, input.role);
    return updateMemberRole(trx, { projectId: input.projectId, userId: target.user_id, role: input.role });
  });
}

/** DELETE a member: leaving (yourself) or removing another member. */
export async function removeMember(db: Kysely<Database>, input: Actor & { targetId: string }): Promise<void> {
  await db.transaction().execute(async (trx) => {
    const { members, me } = await lockWithActor(trx, input);
    const target = findTarget(members, input.targetId);
    assertMayRemove(members, me, target);
    await deleteMember(trx, input.projectId, target.user_id);
  });
}

/** Revokes a pending invitation: its link stops working at once. */
export async function revokeProjectInvitation(db: Kysely<Database>, input: Actor & { invitationId: string }): Promise<void> {
  await db.transaction().execute(async (trx) => {
    const { me } = await lockWithActor(trx, input);
    const invitation = await lockPendingInvitation(trx, input.projectId, input.invitationId);
    if (!invitation) throw notFound('Invitation');
    // Whoever could not send this invitation cannot revoke it (an ADMIN, one to become OWNER).
    assertMayGrant(me.role, invitation.role);
    await revokeInvitation(trx, invitation.id);
  });
}
