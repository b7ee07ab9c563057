const UUID_RE = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

/** True for a syntactically valid UUID (any version): malformed path ids become 404, never 500. */
export const isUuid = (value: string): boolean => UUID_RE.test(value);
