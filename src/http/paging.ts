import { z } from 'zod';

/** SPEC page lists: pageSize defaults to 20; larger than 100 is clamped. */
export const DEFAULT_PAGE_SIZE = 20;
export const MAX_PAGE_SIZE = 100;

/** The `page` and `pageSize` query fields of a page list (spread into its query schema). */
export const pageQueryFields = {
  page: z.coerce.number().int().min(1).default(1).describe('1 or more; default 1; past the last page answers an empty page'),
  pageSize: z.coerce
    .number()
    .int()
    .min(1)
    .default(DEFAULT_PAGE_SIZE)
    .transform((n) => Math.min(n, MAX_PAGE_SIZE))
    .describe(`1 or more; default ${DEFAULT_PAGE_SIZE}; values over ${MAX_PAGE_SIZE} are clamped`),
};

/** The answer of a page list: `{data, page, pageSize, total, totalPages}`. */
export const pageOf = <T extends z.ZodType>(item: T) =>
  z.object({
    data: z.array(item),
    page: z.int(),
    pageSize: z.int().describe('After clamping'),
    total: z.int().describe('Size of the filtered set'),
    totalPages: z.int().describe('ceil(total / pageSize); 0 when nothing matches'),
  });
