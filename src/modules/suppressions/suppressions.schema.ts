import { z } from 'zod';
import { cursorLimitField, cursorListOf } from '../../http/paging.js';
import { SUPPRESSION_REASONS } from '../../db/schema.js';

/** Longest address accepted (RFC 5321 path limit), as for contacts. */
const MAX_EMAIL_LENGTH = 254;
/** A manual entry's note. */
export const MAX_DETAIL_LENGTH = 1000;

export const Suppression = z
  .object({
    // Not z.email(): an answer must never fail on an address another path (a send) accepted.
    email: z.string().describe('Lower-cased; one entry per address and project'),
    reason: z.enum(SUPPRESSION_REASONS).describe('HARD_BOUNCE and COMPLAINT come from the relay\'s notifications; MANUAL from POST /suppressions'),
    detail: z.string().nullable().describe('The bounce diagnostic, the complaint type, or the note given with a manual entry'),
    sourceEmailId: z.uuid().nullable().describe('The email whose bounce or complaint added the entry'),
    createdAt: z.iso.datetime(),
  })
  .meta({ id: 'Suppression' });
export type Suppression = z.infer<typeof Suppression>;

/** Surrounding whitespace is trimmed; compared case-insensitively. */
const email = z.preprocess((v) => (typeof v === 'string' ? v.trim() : v), z.email().max(MAX_EMAIL_LENGTH));

export const AddSuppressionBody = z.object({
  email: email.describe('The address to stop sending to'),
  reason: z.literal('MANUAL').optional().describe('Only MANUAL can be added by hand (the default)'),
  detail: z.string().max(MAX_DETAIL_LENGTH).optional().describe(`A note, at most ${MAX_DETAIL_LENGTH} characters`),
});
export type AddSuppressionBody = z.infer<typeof AddSuppressionBody>;

export const SuppressionEmailParams = z.object({ email: email.describe('The address (URL-encoded)') });

export const ListSuppressionsQuery = z.object({
  limit: cursorLimitField(),
  cursor: z.string().optional().describe('The cursor of the previous page'),
  search: z.string().max(MAX_EMAIL_LENGTH).optional().describe('Case-insensitive substring of the address'),
  reason: z.enum(SUPPRESSION_REASONS).optional().describe('Omitted: every reason'),
});
export type ListSuppressionsQuery = z.infer<typeof ListSuppressionsQuery>;

export const SuppressionList = cursorListOf(Suppression);
export type SuppressionList = z.infer<typeof SuppressionList>;
