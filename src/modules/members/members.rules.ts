import type { ProjectRole } from '../../db/schema.js';
import { ApiError, conflict, ErrorCode, forbidden } from '../../http/errors.js';

/** Invitation limits (docs/members.md "Abuse limits"): a hosted instance must not become a spam cannon. */
export const InviteLimits = {
  /** Days an emailed invitation stays valid. */
  validDays: 7,
  /** Live pending invitations per project. */
  maxPending: 50,
  /** Invites (emailed or joined at once) per project in any rolling hour. */
  perProjectPerHour: 20,
  /** Invites by one user, across all projects, in any rolling 24 hours. */
  perInviterPerDay: 50,
} as const;

const RANK: Record<ProjectRole, number> = { MEMBER: 1, ADMIN: 2, OWNER: 3 };

export interface MemberRole {
  user_id: string;
  role: ProjectRole;
}

/** Who may give `role` to someone else: OWNER any role, ADMIN up to ADMIN, MEMBER nobody. */
export function assertMayGrant(actor: ProjectRole, role: ProjectRole): void {
  if (actor === 'MEMBER') throw forbidden('Only an OWNER or ADMIN can manage members');
  if (role === 'OWNER' && actor !== 'OWNER') throw forbidden('Only an OWNER can make someone an OWNER');
}

/** May `actor` act on `target` (another member)? ADMINs never touch OWNERs. */
export function assertMayManage(actor: ProjectRole, target: ProjectRole): void {
  if (actor === 'MEMBER') throw forbidden('Only an OWNER or ADMIN can manage other members');
  if (target === 'OWNER' && actor !== 'OWNER') throw forbidden('Only an OWNER can change or remove an OWNER');
}

/** The role change of `target` (maybe the actor) to `role`, by the rules of DESIGN §4. */
export function assertMayChangeRole(members: readonly MemberRole[], actor: MemberRole, target: MemberRole, role: ProjectRole): void {
  if (target.user_id === actor.user_id) {
    if (RANK[role] > RANK[actor.role]) throw forbidden('Nobody can raise their own role: ask an OWNER');
  } else {
    assertMayManage(actor.role, target.role);
    assertMayGrant(actor.role, role);
  }
  if (target.role === 'OWNER' && role !== 'OWNER') assertNotLastOwner(members);
}

/** Removal of `target`: anyone may leave; others are removed by an OWNER or ADMIN (not OWNERs by an ADMIN). */
export function assertMayRemove(members: readonly MemberRole[], actor: MemberRole, target: MemberRole): void {
  if (target.user_id !== actor.user_id) assertMayManage(actor.role, target.role);
  if (target.role === 'OWNER') assertNotLastOwner(members);
}

function assertNotLastOwner(members: readonly MemberRole[]): void {
  if (members.filter((m) => m.role === 'OWNER').length <= 1) {
    throw conflict('A project keeps at least one OWNER: make another member OWNER first (ownership transfer), then step down');
  }
}

/** 429 for an exceeded invite rate, with Retry-After: when the oldest invite in the window leaves it. */
export function inviteRateExceeded(what: string, retryAt: Date): ApiError {
  const retryAfter = Math.max(1, Math.ceil((retryAt.getTime() - Date.now()) / 1000));
  return new ApiError(429, ErrorCode.RATE_LIMIT_EXCEEDED, `Too many invitations: ${what}; try again in ${retryAfter} seconds`, {
    headers: { 'Retry-After': String(retryAfter) },
    details: { retryAfter, retryAt: retryAt.toISOString() },
  });
}
