import { convert } from 'html-to-text';

/** Variables of one rendering: contact data, one-off data, and the reserved email/URL values. */
export type Variables = Record<string, string | number | boolean | null | undefined>;

// {{{key}}} raw, {{key}} escaped, {{ key ?? "fallback" }} / {{key ?? fallback}} with a fallback.
const TAG = /\{\{\{\s*([^{}?]+?)\s*(?:\?\?\s*([^{}]*?))?\s*\}\}\}|\{\{\s*([^{}?]+?)\s*(?:\?\?\s*([^{}]*?))?\s*\}\}/g;

const ESCAPES: Record<string, string> = { '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' };
export const escapeHtml = (value: string): string => value.replace(/[&<>"']/g, (c) => ESCAPES[c] ?? c);

function unquote(fallback: string): string {
  const f = fallback.trim();
  return /^(["']).*\1$/s.test(f) ? f.slice(1, -1) : f;
}

function lookup(vars: Variables, key: string, fallback: string | undefined): string {
  const value = Object.hasOwn(vars, key) ? vars[key] : undefined;
  if (value === undefined || value === null || value === '') return fallback === undefined ? '' : unquote(fallback);
  return String(value);
}

/**
 * Fills `{{key}}`, `{{key ?? fallback}}` and `{{{key}}}`. With `escape` (HTML bodies) values
 * of `{{…}}` are HTML-escaped and `{{{…}}}` are inserted raw; without it (subjects, text)
 * every value is inserted as is. A missing value with no fallback renders as empty.
 */
export function renderTemplate(template: string, vars: Variables, opts: { escape: boolean }): string {
  return template.replace(TAG, (_m, rawKey?: string, rawFallback?: string, key?: string, fallback?: string) => {
    if (rawKey !== undefined) return lookup(vars, rawKey.trim(), rawFallback);
    const value = lookup(vars, (key ?? '').trim(), fallback);
    return opts.escape ? escapeHtml(value) : value;
  });
}

/** Keys a template references (for usage reports and validation). */
export function templateVariables(template: string): string[] {
  const keys = new Set<string>();
  for (const m of template.matchAll(TAG)) keys.add((m[1] ?? m[3] ?? '').trim());
  return [...keys].filter(Boolean);
}

/** The plain-text part generated from an HTML body: links kept as "text [url]". */
export function htmlToText(html: string): string {
  return convert(html, {
    wordwrap: 78,
    selectors: [
      { selector: 'img', format: 'skip' },
      { selector: 'a', options: { hideLinkHrefIfSameAsText: true } },
    ],
  }).trim();
}
