import { type RawBuilder, sql, type SqlBool } from 'kysely';

/** `%search%` with `\`, `%` and `_` escaped, so LIKE matches the text literally (use `ESCAPE '\\'`). */
export const likePattern = (search: string): string => `%${search.replace(/[\\%_]/g, (c) => `\\${c}`)}%`;

/** Case-insensitive literal substring match on any of the columns. */
export function ilikeAny(columns: readonly string[], search: string): RawBuilder<SqlBool> {
  const p = likePattern(search);
  const parts = columns.map((c) => sql`${sql.ref(c)} ILIKE ${p} ESCAPE '\\'`);
  return sql<SqlBool>`(${sql.join(parts, sql` OR `)})`;
}

/** Sort keys of the page lists (templates, campaigns): names case-insensitively (the collation may be C). */
export const NAME_DATE_SORT_KEYS = {
  createdAt: sql`created_at`,
  updatedAt: sql`updated_at`,
  name: sql`lower(name)`,
} as const;
