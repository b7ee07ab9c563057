import type { Kysely } from 'kysely';
import type { Database, ProjectRole } from '../../db/schema.js';
import { ApiError, ErrorCode, forbidden } from '../../http/errors.js';
import { acceptInvitations, findLiveInvitationByToken, lockInvitationByToken } from './invitations.repo.js';
import { findMemberRole } from './members.repo.js';
import { hashInvitationToken } from './members.service.js';
import type { AcceptedInvitation, InvitationPreview } from './members.schema.js';

const gone = (message: string) => new ApiError(404, ErrorCode.NOT_FOUND, message);

/**
 * Accepts the live pending invitations to the user's address when that address is proven
 * (verified). Called after password sign-up and sign-in, OAuth sign-in and email verification.
 * An unverified address accepts nothing: anyone can sign up with any address, so only proof
 * (verification, or the emailed token through POST /auth/accept-invitation) lets one in.
 * One statement; returns the projects joined.
 */
export async function acceptPendingInvitations(
  db: Kysely<Database>,
  user: { userId: string; email: string; emailVerified: boolean },
): Promise<{ projectId: string; role: ProjectRole }[]> {
  if (!user.emailVerified) return [];
  return acceptInvitations(db, { userId: user.userId, email: user.email.toLowerCase() });
}

/** GET /auth/invitation?token=…: what the invitation page shows before sign-in (the token holder has the email anyway). */
export async function previewInvitation(db: Kysely<Database>, token: string): Promise<InvitationPreview> {
  const row = await findLiveInvitationByToken(db, hashInvitationToken(token));
  if (!row) throw gone('This invitation is not valid: it expired, was revoked or replaced, or was already used');
  return { email: row.email, projectName: row.project_name, role: row.role, invitedBy: row.inviter_email, expiresAt: row.expires_at.toISOString() };
}

/**
 * POST /auth/accept-invitation: the emailed token proves the address, so it works before the
 * address is verified; the signed-in user's address must be the invited one. Accepting the
 * same invitation again answers the same (idempotent); a revoked, replaced, used or expired
 * token is 404.
 */
export async function acceptInvitationToken(db: Kysely<Database>, input: { userId: string; email: string; token: string }): Promise<AcceptedInvitation> {
  return db.transaction().execute(async (trx) => {
    const invitation = await lockInvitationByToken(trx, hashInvitationToken(input.token));
    if (!invitation || invitation.status === 'REVOKED' || (invitation.status === 'ACCEPTED' && invitation.accepted_by !== input.userId)) {
      throw gone('This invitation is not valid: it was revoked, replaced by a newer one or already used');
    }
    if (invitation.status === 'PENDING') {
      if (invitation.expired) throw gone('This invitation expired: ask the project for a new one');
      if (invitation.email !== input.email.toLowerCase()) {
        throw forbidden('This invitation was sent to another address: sign in with that address to accept it');
      }
      await acceptInvitations(trx, { userId: input.userId, email: invitation.email, ids: [invitation.id] });
    }
    // The role held now (an existing membership keeps its own); accepted once and left since: used up.
    const role = await findMemberRole(trx, invitation.project_id, input.userId);
    if (!role) throw gone('This invitation was already used');
    return { projectId: invitation.project_id, projectName: invitation.project_name, role };
  });
}
