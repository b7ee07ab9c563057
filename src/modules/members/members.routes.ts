import type { FastifyInstance, FastifyRequest } from 'fastify';
import type { ZodTypeProvider } from 'fastify-type-provider-zod';
import type { AppDeps } from '../../app-deps.js';
import { projectIdOf } from '../../http/auth.js';
import { Roles } from '../../http/context.js';
import { ApiError, ErrorCode } from '../../http/errors.js';
import { findUserEmail } from './members.repo.js';
import {
  AcceptedInvitation,
  AcceptInvitationBody,
  InvitationParams,
  InvitationPreview,
  InvitationQuery,
  InviteBody,
  InviteResult,
  Member,
  MemberParams,
  MembersList,
  ProjectIdParams,
  UpdateMemberBody,
} from './members.schema.js';
import { changeMemberRole, inviteMember, listProjectMembers, removeMember, revokeProjectInvitation } from './members.service.js';
import { acceptInvitationToken, previewInvitation } from './invitations.service.js';

function userIdOf(request: FastifyRequest): string {
  if (!request.user) throw new ApiError(401, ErrorCode.UNAUTHORIZED, 'Not signed in: log in with POST /auth/login');
  return request.user.id;
}

/**
 * /projects/:id/members* and /projects/:id/invitations/:invitationId (session cookie only: API
 * keys are not people), and POST /auth/accept-invitation. The auth hook checks the caller's role
 * from `config.roles`; the finer rules (owners, own role, the last OWNER) are the service's.
 */
export async function membersRoutes(app: FastifyInstance, deps: AppDeps): Promise<void> {
  const r = app.withTypeProvider<ZodTypeProvider>();
  const tags = ['Members'];
  const actor = (request: FastifyRequest) => ({ projectId: projectIdOf(request), userId: userIdOf(request) });

  r.get('/projects/:id/members', {
    config: { auth: 'user', roles: Roles.members },
    schema: { tags, summary: 'The project\'s members and pending invitations (any member)', params: ProjectIdParams, response: { 200: MembersList } },
    handler: async (request) => listProjectMembers(deps.db, projectIdOf(request)),
  });

  r.post('/projects/:id/members', {
    config: { auth: 'user', roles: Roles.admins },
    schema: {
      tags,
      summary: 'Invite by email (OWNER, ADMIN; only an OWNER grants OWNER)',
      description:
        'An address with an account joins at once (status ADDED). Another address gets a pending invitation, emailed with a link ' +
        '(PUBLIC_URL/app/invitations?token=…) valid 7 days (status INVITED); inviting it again replaces the pending one. Limits: ' +
        '50 pending per project, 20 invites per project per hour, 50 per inviter per 24 hours (429 with Retry-After).',
      params: ProjectIdParams,
      body: InviteBody,
      response: { 201: InviteResult },
    },
    handler: async (request, reply) => {
      const result = await inviteMember(deps.db, { ...actor(request), ...request.body, publicUrl: deps.config.publicUrl });
      return reply.code(201).send(result);
    },
  });

  r.patch('/projects/:id/members/:userId', {
    config: { auth: 'user', roles: Roles.admins },
    schema: {
      tags,
      summary: 'Change a role (OWNER, ADMIN; an ADMIN never touches OWNERs; nobody raises their own role)',
      description: 'Ownership transfer: an OWNER makes another member OWNER, then may step down. The last OWNER cannot be demoted (409).',
      params: MemberParams,
      body: UpdateMemberBody,
      response: { 200: Member },
    },
    handler: async (request) => changeMemberRole(deps.db, { ...actor(request), targetId: request.params.userId, role: request.body.role }),
  });

  r.delete('/projects/:id/members/:userId', {
    config: { auth: 'user', roles: Roles.members },
    schema: {
      tags,
      summary: 'Remove a member (OWNER, ADMIN), or leave (your own id, any role)',
      description: 'An ADMIN cannot remove an OWNER. The last OWNER cannot leave (409): transfer ownership first, or delete the project.',
      params: MemberParams,
    },
    handler: async (request, reply) => {
      await removeMember(deps.db, { ...actor(request), targetId: request.params.userId });
      return reply.code(204).send();
    },
  });

  r.delete('/projects/:id/invitations/:invitationId', {
    config: { auth: 'user', roles: Roles.admins },
    schema: {
      tags,
      summary: 'Revoke a pending invitation (OWNER, ADMIN; an invitation as OWNER: OWNER only); its link stops working',
      params: InvitationParams,
    },
    handler: async (request, reply) => {
      await revokeProjectInvitation(deps.db, { ...actor(request), invitationId: request.params.invitationId });
      return reply.code(204).send();
    },
  });

  r.get('/auth/invitation', {
    config: { auth: 'none', rateLimit: 'ip' },
    schema: {
      tags,
      summary: 'What an emailed invitation is (for its page, before sign-in): address, project, role, inviter, expiry',
      description: '404 once it expired, was revoked or replaced, or was used. The token stays out of the request log.',
      querystring: InvitationQuery,
      response: { 200: InvitationPreview },
    },
    handler: async (request) => previewInvitation(deps.db, request.query.token),
  });

  r.post('/auth/accept-invitation', {
    config: { auth: 'user', rateLimit: 'ip' },
    schema: {
      tags,
      summary: 'Accept an emailed invitation with its token (signed in with the invited address)',
      description:
        'The token proves the address, so this works before the address is verified. Invitations to a verified address are also ' +
        'accepted by themselves at sign-up and sign-in. 404 for a revoked, replaced, used or expired token; 403 when signed in with another address.',
      body: AcceptInvitationBody,
      response: { 200: AcceptedInvitation },
    },
    handler: async (request) => {
      const userId = userIdOf(request);
      const email = await findUserEmail(deps.db, userId);
      if (email === undefined) throw new ApiError(401, ErrorCode.UNAUTHORIZED, 'This account no longer exists; sign in again');
      return acceptInvitationToken(deps.db, { userId, email, token: request.body.token });
    },
  });
}
