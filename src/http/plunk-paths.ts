/**
 * Plunk's clients build a call's URL as `new URL('track', baseUrl)`: with the base URL
 * `https://host/v1` (no trailing slash) that is `https://host/track`. These root paths lead
 * to the public API, so `/v1` works as a base URL with or without the slash.
 */
const ROOT_ALIASES: ReadonlySet<string> = new Set(['/send', '/track', '/verify']);

/** The URL the router sees: `/track?x` → `/v1/track?x`; every other URL unchanged. */
export function rewritePublicApiUrl(url: string | undefined): string {
  const raw = url ?? '/';
  const query = raw.indexOf('?');
  const path = query === -1 ? raw : raw.slice(0, query);
  const trimmed = path.length > 1 ? path.replace(/\/+$/, '') : path;
  return ROOT_ALIASES.has(trimmed) ? `/v1${raw}` : raw;
}
