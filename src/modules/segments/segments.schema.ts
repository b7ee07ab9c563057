import { z } from 'zod';
import { pageOf, pageQueryFields } from '../../http/paging.js';
import { Contact } from '../contacts/index.js';

export const SEGMENT_TYPES = ['DYNAMIC', 'STATIC'] as const;
/** POST/DELETE /segments/:id/members: emails per call. */
export const MAX_MEMBER_EMAILS = 1000;

export const Segment = z
  .object({
    id: z.uuid(),
    name: z.string(),
    description: z.string(),
    type: z.enum(SEGMENT_TYPES),
    condition: z.record(z.string(), z.unknown()).nullable().describe('Condition tree (DYNAMIC); null for STATIC'),
    trackMembership: z.boolean(),
    memberCount: z.number().int().describe('Cached: updated by compute, refresh and static member changes'),
    projectId: z.uuid(),
    createdAt: z.iso.datetime(),
    updatedAt: z.iso.datetime(),
  })
  .meta({ id: 'Segment' });
export type Segment = z.infer<typeof Segment>;

export const SegmentList = z.array(Segment);

export const CreateSegmentBody = z.object({
  name: z.string().trim().min(1).max(100),
  description: z.string().max(500).optional(),
  type: z.enum(SEGMENT_TYPES).optional().describe('Default DYNAMIC'),
  // Checked by the handler: a DYNAMIC segment without an object answers the legacy 400,
  // a malformed tree 422 naming the filter. Ignored for STATIC.
  condition: z.unknown().optional().describe('Condition tree; required for DYNAMIC, ignored for STATIC'),
  trackMembership: z.boolean().optional().describe('Default false'),
});
export type CreateSegmentBody = z.infer<typeof CreateSegmentBody>;

export const UpdateSegmentBody = z.object({
  name: z.string().trim().min(1).max(100).optional(),
  description: z.string().max(500).optional(),
  condition: z.unknown().optional().describe('DYNAMIC only (409 on STATIC)'),
  trackMembership: z.boolean().optional(),
});
export type UpdateSegmentBody = z.infer<typeof UpdateSegmentBody>;

export const CountConditionBody = z.object({
  condition: z.record(z.string(), z.unknown()).describe('A condition tree (DESIGN §7), as a segment would hold it'),
});
export type CountConditionBody = z.infer<typeof CountConditionBody>;

export const ConditionCount = z
  .object({ count: z.int().describe('Contacts of the project matching the condition now (subscribed or not)') })
  .meta({ id: 'ConditionCount' });
export type ConditionCount = z.infer<typeof ConditionCount>;

export const SegmentIdParams = z.object({ id: z.string() });

export const MembersQuery = z.object(pageQueryFields);
export type MembersQuery = z.infer<typeof MembersQuery>;

export const MemberPage = pageOf(Contact);
export type MemberPage = z.infer<typeof MemberPage>;

const Emails = z.array(z.string().trim().toLowerCase().pipe(z.email().max(254))).min(1).max(MAX_MEMBER_EMAILS);

export const AddMembersBody = z.object({
  emails: Emails,
  createMissing: z.boolean().optional().describe('Create contacts for unknown emails (default false)'),
  subscribed: z.boolean().optional().describe('Subscription of contacts created here (default true)'),
});
export type AddMembersBody = z.infer<typeof AddMembersBody>;

export const AddMembersResult = z.object({
  added: z.number().int(),
  alreadyMembers: z.number().int(),
  created: z.number().int(),
  notFound: z.number().int(),
  memberCount: z.number().int(),
});
export type AddMembersResult = z.infer<typeof AddMembersResult>;

export const RemoveMembersBody = z.object({ emails: Emails });
export type RemoveMembersBody = z.infer<typeof RemoveMembersBody>;

export const RemoveMembersResult = z.object({
  removed: z.number().int(),
  notMembers: z.number().int(),
  notFound: z.number().int(),
  memberCount: z.number().int(),
});
export type RemoveMembersResult = z.infer<typeof RemoveMembersResult>;

export const ComputeResult = z.object({
  memberCount: z.number().int(),
  entered: z.number().int(),
  exited: z.number().int(),
});
export type ComputeResult = z.infer<typeof ComputeResult>;
