import { z } from 'zod';

export const FIELD_TYPES = ['string', 'number', 'boolean', 'date'] as const;
export type FieldType = (typeof FIELD_TYPES)[number];

/** Largest page of GET /contacts/fields/:field/values; larger values are clamped. */
export const MAX_VALUES_PAGE_SIZE = 100;

export const Field = z.object({
  field: z.string().describe('Name in conditions: email, subscribed, createdAt, updatedAt, or data.<key>'),
  key: z.string().describe('The data key (the field name for standard fields)'),
  type: z.enum(FIELD_TYPES).describe('Most frequent value type; strings that are mostly ISO 8601 dates are date'),
  count: z.number().int().describe('Contacts having the field'),
  coverage: z.number().describe('count / totalContacts, in percent, 2 decimals'),
  standard: z.boolean(),
});
export type Field = z.infer<typeof Field>;

/** Data keys listed by GET /contacts/fields at most (those most contacts have). */
export const MAX_LISTED_FIELDS = 1000;

export const FieldsList = z.object({
  data: z.array(Field).describe(`Standard fields, then at most ${MAX_LISTED_FIELDS} data keys: those most contacts have`),
  totalContacts: z.number().int(),
  totalKeys: z.number().int().describe('Distinct data keys of the project, listed or not'),
  truncated: z.boolean().describe(`True when the project has more than ${MAX_LISTED_FIELDS} distinct data keys (the rest are not listed)`),
});
export type FieldsList = z.infer<typeof FieldsList>;

export const FieldParams = z.object({ field: z.string().min(1).describe('A data key, as `plan` or `data.plan`') });

export const ValuesQuery = z.object({
  page: z.coerce.number().int().min(1).default(1),
  pageSize: z.coerce.number().int().min(1).default(20).describe(`At most ${MAX_VALUES_PAGE_SIZE}; larger values are clamped`),
});

export const FieldValue = z.object({ value: z.union([z.string(), z.number(), z.boolean()]), count: z.number().int() });
export type FieldValue = z.infer<typeof FieldValue>;

export const ValuesPage = z.object({
  data: z.array(FieldValue).describe('Distinct values, most frequent first'),
  page: z.number().int(),
  pageSize: z.number().int(),
  total: z.number().int().describe('Distinct values'),
  totalPages: z.number().int(),
});
export type ValuesPage = z.infer<typeof ValuesPage>;

const UsageRef = z.object({ id: z.uuid(), name: z.string() });

export const FieldUsage = z.object({
  field: z.string(),
  segments: z.array(UsageRef),
  campaigns: z.array(UsageRef),
  templates: z.array(UsageRef),
  workflows: z.array(UsageRef),
});
export type FieldUsage = z.infer<typeof FieldUsage>;
