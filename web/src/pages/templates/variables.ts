/**
 * The template language of docs/templates.md (src/mail/render.ts), reproduced for the editor's
 * live preview, its autocomplete and its unknown-variable warnings. Self-contained (no imports):
 * unit-tested in test/web/campaigns-template-variables.test.ts against the documented rules.
 *
 * - `{{key}}` inserts the value, HTML-escaped in bodies, raw in subjects; `{{{key}}}` is raw HTML.
 * - `{{key ?? fallback}}`: the fallback is used when the value is missing, null or '' (not 0 or
 *   false). Quoted fallbacks ("…" or '…') lose their quotes and keep inner spaces; unquoted ones
 *   are trimmed. A fallback cannot contain `{` or `}`.
 * - Whitespace inside the braces is ignored; keys are flat names (`user.name` is one key), may
 *   hold dashes and inner spaces, never `?`. A missing key without fallback renders as ''.
 * - Text that is not a tag (`{{ }}`, `{{}}`, `{{a?b}}`) stays as written; inserted values are never
 *   scanned again. Only own keys are read (`{{constructor}}` is missing).
 */

export type Variables = Record<string, unknown>;

/** `{{{inner}}}` or `{{inner}}`; `[^{}]*` keeps matching linear (no overlapping groups). */
const TAG = /\{\{\{([^{}]*)\}\}\}|\{\{([^{}]*)\}\}/g;

const ESCAPES: Record<string, string> = { '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' };
export const escapeHtml = (value: string): string => value.replace(/[&<>"']/g, (c) => ESCAPES[c] ?? c);

/** The variables every email has besides the contact's data (filled by the server at delivery). */
export const RESERVED_VARIABLES = ['email', 'unsubscribeUrl', 'subscribeUrl', 'manageUrl'] as const;

export interface Tag {
  key: string;
  fallback: string | undefined;
}

/** `key` or `key ?? fallback`; undefined when the inner text is not a tag. */
export function parseTag(inner: string): Tag | undefined {
  const at = inner.indexOf('??');
  const key = (at === -1 ? inner : inner.slice(0, at)).trim();
  if (key === '' || key.includes('?')) return undefined;
  return { key, fallback: at === -1 ? undefined : unquote(inner.slice(at + 2)) };
}

function unquote(fallback: string): string {
  const f = fallback.trim();
  return f.length >= 2 && (f[0] === '"' || f[0] === "'") && f.at(-1) === f[0] ? f.slice(1, -1) : f;
}

/** The exact flat key, else a dotted path through nested objects; own keys only. */
function resolve(vars: Variables, key: string): unknown {
  if (Object.hasOwn(vars, key)) return vars[key];
  if (!key.includes('.')) return undefined;
  let value: unknown = vars;
  for (const part of key.split('.')) {
    if (typeof value !== 'object' || value === null || !Object.hasOwn(value, part)) return undefined;
    value = Reflect.get(value, part);
  }
  return value;
}

function lookup(vars: Variables, tag: Tag): string {
  const value = resolve(vars, tag.key);
  if (value === undefined || value === null || value === '') return tag.fallback ?? '';
  return String(value);
}

/** Fills the tags of `template`; `escape` for HTML bodies (values of `{{…}}` escaped, `{{{…}}}` raw). */
export function renderTemplate(template: string, vars: Variables, opts: { escape: boolean }): string {
  return template.replace(TAG, (match, rawInner: string | undefined, inner: string | undefined) => {
    const tag = parseTag(rawInner ?? inner ?? '');
    if (!tag) return match;
    const value = lookup(vars, tag);
    return rawInner === undefined && opts.escape ? escapeHtml(value) : value;
  });
}

export interface TagUse extends Tag {
  /** Offsets of the whole tag (braces included) in the template. */
  from: number;
  to: number;
  raw: boolean;
}

/** Every tag of the template with its position (for underlining unknown variables). */
export function findTags(template: string): TagUse[] {
  const out: TagUse[] = [];
  for (const m of template.matchAll(TAG)) {
    const tag = parseTag(m[1] ?? m[2] ?? '');
    if (tag) out.push({ ...tag, from: m.index, to: m.index + m[0].length, raw: m[1] !== undefined });
  }
  return out;
}

/** Keys a template references, each once, in order of first use. */
export function templateVariables(template: string): string[] {
  return [...new Set(findTags(template).map((t) => t.key))];
}

/**
 * Keys used in the templates that are neither reserved nor among `known` (the project's data
 * keys), each once, in order of first use. A tag with a fallback still counts: the fallback may
 * hide a misspelt key.
 */
export function unknownVariables(templates: string[], known: Iterable<string>): string[] {
  const ok = new Set<string>([...RESERVED_VARIABLES, ...known]);
  const seen = new Set<string>();
  for (const t of templates) for (const key of templateVariables(t)) if (!ok.has(key)) seen.add(key);
  return [...seen];
}

/**
 * The variables of a preview rendered as a contact: its data, then `email` and placeholder
 * subscription links (which no data can override, as at delivery).
 */
export function previewVariables(contact: { email: string; data: Record<string, unknown> } | undefined): Variables {
  const links = { unsubscribeUrl: '#unsubscribe', subscribeUrl: '#subscribe', manageUrl: '#manage' };
  if (!contact) return { ...links };
  return { ...contact.data, email: contact.email, ...links };
}

/**
 * The autocomplete context at `pos`: when the text before the cursor is inside an open `{{`
 * (no closing braces yet), the offset where the key being typed starts and what is typed so far.
 */
export function openTagAt(text: string, pos: number): { from: number; typed: string } | undefined {
  const before = text.slice(Math.max(0, pos - 200), pos);
  const open = before.lastIndexOf('{{');
  if (open === -1) return undefined;
  const inner = before.slice(open + 2).replace(/^\{/, '');
  if (/[{}]/.test(inner) || inner.includes('??')) return undefined;
  const lead = inner.length - inner.trimStart().length;
  const from = pos - inner.length + lead;
  return { from, typed: inner.trimStart() };
}
