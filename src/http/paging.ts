import { z } from 'zod';

/** SPEC page lists: pageSize defaults to 20; larger than 100 is clamped. */
export const DEFAULT_PAGE_SIZE = 20;
export const MAX_PAGE_SIZE = 100;

/** A page size query field: default 20, larger than 100 clamped. */
const pageSizeField = () =>
  z.coerce
    .number()
    .int()
    .min(1)
    .default(DEFAULT_PAGE_SIZE)
    .transform((n) => Math.min(n, MAX_PAGE_SIZE))
    .describe(`1 or more; default ${DEFAULT_PAGE_SIZE}; values over ${MAX_PAGE_SIZE} are clamped`);

/** The `page` and `pageSize` query fields of a page list (spread into its query schema). */
export const pageQueryFields = {
  page: z.coerce.number().int().min(1).default(1).describe('1 or more; default 1; past the last page answers an empty page'),
  pageSize: pageSizeField(),
};

/** The `limit` query field of a cursor list (SPEC: default 20, 1 to 100, larger clamped). */
export const cursorLimitField = pageSizeField;

/** The answer of a cursor list: `{data, cursor, hasMore, total}` (total on the first page only). */
export const cursorListOf = <T extends z.ZodType>(item: T) =>
  z.object({
    data: z.array(item),
    cursor: z.string().nullable().describe('Pass as `cursor` for the next page; null on the last page'),
    hasMore: z.boolean(),
    total: z.int().describe('Size of the filtered set on the first page (no cursor); 0 on later pages'),
  });

/** The answer of a page list: `{data, page, pageSize, total, totalPages}`. */
export const pageOf = <T extends z.ZodType>(item: T) =>
  z.object({
    data: z.array(item),
    page: z.int(),
    pageSize: z.int().describe('After clamping'),
    total: z.int().describe('Size of the filtered set'),
    totalPages: z.int().describe('ceil(total / pageSize); 0 when nothing matches'),
  });
