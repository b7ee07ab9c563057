import { z } from 'zod';
import { cursorLimitField, cursorListOf } from '../../http/paging.js';
import { ContactDataInput } from './data-rules.js';

/** Longest address accepted (RFC 5321 path limit). */
const MAX_EMAIL_LENGTH = 254;
/** POST /contacts/lookup: emails per call (SPEC Limits). */
export const MAX_LOOKUP_EMAILS = 500;

export const CONTACT_SORTS = ['createdAt', 'email'] as const;
export type ContactSort = (typeof CONTACT_SORTS)[number];
export const SORT_DIRS = ['desc', 'asc'] as const;
export type SortDir = (typeof SORT_DIRS)[number];

export const Contact = z
  .object({
    id: z.uuid(),
    // Not z.email(): an answer must never fail on an address another path (import, track) accepted.
    email: z.string().describe('Lower-cased; unique per project'),
    subscribed: z.boolean(),
    data: z.record(z.string(), z.union([z.string(), z.number(), z.boolean()])),
    createdAt: z.iso.datetime(),
    updatedAt: z.iso.datetime(),
  })
  .meta({ id: 'Contact' });
export type Contact = z.infer<typeof Contact>;

export const UpsertedContact = Contact.extend({
  _meta: z.object({
    isNew: z.boolean().describe('The contact was created by this call (201)'),
    isUpdate: z.boolean().describe('The contact already existed (200)'),
  }),
});
export type UpsertedContact = z.infer<typeof UpsertedContact>;

/** Surrounding whitespace is trimmed; with `blankIsMissing`, null and '' read as absent. */
const email = (blankIsMissing: boolean) =>
  z.preprocess((v) => {
    const s = typeof v === 'string' ? v.trim() : v;
    return blankIsMissing && (s === '' || s === null) ? undefined : s;
  }, z.email().max(MAX_EMAIL_LENGTH).optional());

export const UpsertContactBody = z.object({
  // Optional here so a missing email reaches the handler, which answers the legacy 400.
  email: email(true).describe('Required; compared case-insensitively'),
  subscribed: z.boolean().optional().describe('Default true for a new contact; an existing one keeps its state unless given'),
  data: ContactDataInput.optional(),
});
export type UpsertContactBody = z.infer<typeof UpsertContactBody>;

export const UpdateContactBody = z.object({
  email: email(false).describe('409 if another contact of the project has it'),
  subscribed: z.boolean().optional(),
  data: ContactDataInput.optional(),
});
export type UpdateContactBody = z.infer<typeof UpdateContactBody>;

export const ContactIdParams = z.object({ id: z.string() });

export const ListContactsQuery = z.object({
  limit: cursorLimitField(),
  cursor: z.string().optional().describe('The cursor of the previous page, with the same sort and dir'),
  search: z.string().max(MAX_EMAIL_LENGTH).optional().describe('Case-insensitive substring of the email'),
  subscribed: z
    .enum(['true', 'false'])
    .optional()
    .transform((v) => (v === undefined ? undefined : v === 'true'))
    .describe('Omitted: both states'),
  sort: z.enum(CONTACT_SORTS).catch('createdAt').default('createdAt').describe('Unrecognised values fall back to createdAt'),
  dir: z.enum(SORT_DIRS).catch('desc').default('desc').describe('Unrecognised values fall back to desc'),
});
export type ListContactsQuery = z.infer<typeof ListContactsQuery>;

export const ContactList = cursorListOf(Contact);
export type ContactList = z.infer<typeof ContactList>;

export const LookupBody = z.object({
  emails: z.array(z.string()).min(1).max(MAX_LOOKUP_EMAILS).describe(`1 to ${MAX_LOOKUP_EMAILS} addresses`),
});
export type LookupBody = z.infer<typeof LookupBody>;

export const LookupResult = z.object({
  data: z.array(
    z.object({
      email: z.string().describe('As given in the request'),
      exists: z.boolean(),
      contact: Contact.nullable(),
    }),
  ),
});
export type LookupResult = z.infer<typeof LookupResult>;
