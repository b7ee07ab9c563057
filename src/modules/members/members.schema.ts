import { z } from 'zod';
import { PROJECT_ROLES } from '../../db/schema.js';

const role = z.enum(PROJECT_ROLES).describe('OWNER: everything, incl. delete, reset and billing; ADMIN: members (not owners), keys, settings; MEMBER: project resources');

export const MemberParams = z.object({ id: z.string(), userId: z.string() });
export const InvitationParams = z.object({ id: z.string(), invitationId: z.string() });

export const InviteBody = z.object({
  email: z.email().max(254).describe('An existing user joins at once; another address gets a pending invitation by email'),
  role,
});
export type InviteBody = z.infer<typeof InviteBody>;

export const UpdateMemberBody = z.object({ role });
export type UpdateMemberBody = z.infer<typeof UpdateMemberBody>;

export const AcceptInvitationBody = z.object({ token: z.string().min(1).max(200).describe('The `token` of the emailed link') });

export const Member = z
  .object({ userId: z.uuid(), email: z.email(), role: z.enum(PROJECT_ROLES), createdAt: z.iso.datetime().describe('When they joined') })
  .meta({ id: 'Member' });
export type Member = z.infer<typeof Member>;

export const Invitation = z
  .object({
    id: z.uuid(),
    email: z.email(),
    role: z.enum(PROJECT_ROLES),
    invitedBy: z.object({ userId: z.uuid(), email: z.email() }).nullable().describe('Null once the inviter\'s account is gone'),
    expiresAt: z.iso.datetime(),
    createdAt: z.iso.datetime(),
  })
  .meta({ id: 'Invitation' });
export type Invitation = z.infer<typeof Invitation>;

export const MembersList = z.object({
  members: z.array(Member),
  invitations: z.array(Invitation).describe('Pending invitations that have not expired, newest first'),
});
export type MembersList = z.infer<typeof MembersList>;

export const InviteResult = z.discriminatedUnion('status', [
  z.object({ status: z.literal('ADDED').describe('The address had an account: it is a member now'), member: Member }),
  z.object({ status: z.literal('INVITED').describe('An invitation was emailed; it waits for that address to sign up or sign in'), invitation: Invitation }),
]);
export type InviteResult = z.infer<typeof InviteResult>;

export const InvitationQuery = z.object({ token: z.string().min(1).max(200).describe('The `token` of the emailed link') });

export const InvitationPreview = z
  .object({
    email: z.email().describe('The invited address: sign up or sign in with it'),
    projectName: z.string(),
    role: z.enum(PROJECT_ROLES),
    invitedBy: z.email().nullable().describe('The inviter\'s address; null once their account is gone'),
    expiresAt: z.iso.datetime(),
  })
  .meta({ id: 'InvitationPreview' });
export type InvitationPreview = z.infer<typeof InvitationPreview>;

export const AcceptedInvitation = z.object({ projectId: z.uuid(), projectName: z.string(), role: z.enum(PROJECT_ROLES) });
export type AcceptedInvitation = z.infer<typeof AcceptedInvitation>;

export const ProjectIdParams = z.object({ id: z.string() });
