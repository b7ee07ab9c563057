import { createRequire } from 'node:module';
import type { compile } from 'html-to-text';
import { htmlDepth, indexOfCaseless, MAX_HTML_DEPTH } from './html-depth.js';

/**
 * Variables of one rendering: contact data, one-off data, and the reserved email/URL values.
 * Values are usually scalars; nested objects (a workflow's `event`, `context`) are reached
 * with dotted paths (`{{event.orderId}}`).
 */
export type Variables = Record<string, unknown>;

/**
 * `{{{inner}}}` (raw) or `{{inner}}` (escaped). The inner text is parsed in code, not by the
 * pattern: a pattern with several overlapping `\s*` and lazy groups backtracks polynomially
 * (a `{{` followed by 1,000 spaces took 35 s), and a template body can be 1 MB. `[^{}]*`
 * cannot overlap with its delimiters, so matching is linear.
 */
const TAG = /\{\{\{([^{}]*)\}\}\}|\{\{([^{}]*)\}\}/g;

const ESCAPES: Record<string, string> = { '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' };
export const escapeHtml = (value: string): string => value.replace(/[&<>"']/g, (c) => ESCAPES[c] ?? c);

interface Tag {
  key: string;
  fallback: string | undefined;
}

/** `key` or `key ?? fallback`, whitespace around each ignored; undefined when not a tag (`{{ }}`, `{{a?b}}`). */
function parseTag(inner: string): Tag | undefined {
  const at = inner.indexOf('??');
  const key = (at === -1 ? inner : inner.slice(0, at)).trim();
  if (key === '' || key.includes('?')) return undefined;
  return { key, fallback: at === -1 ? undefined : unquote(inner.slice(at + 2)) };
}

/** `"text"` and `'text'` lose their quotes; an unquoted fallback is taken as written (trimmed). */
function unquote(fallback: string): string {
  const f = fallback.trim();
  return f.length >= 2 && (f[0] === '"' || f[0] === "'") && f.at(-1) === f[0] ? f.slice(1, -1) : f;
}

/**
 * The value of a key: the variable of that exact name (`user.name` may be a flat key of contact
 * data), else, for a dotted key, the path through nested objects (`event.order.id`). Own keys
 * only at every step: `{{constructor}}` and `{{a.constructor}}` are missing.
 */
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

/** The text of a key; missing, null and '' take the fallback (or ''). */
function lookup(vars: Variables, tag: Tag): string {
  const value = resolve(vars, tag.key);
  if (value === undefined || value === null || value === '') return tag.fallback ?? '';
  return String(value);
}

/**
 * Fills `{{key}}`, `{{key ?? fallback}}` and `{{{key}}}`. With `escape` (HTML bodies) values
 * of `{{…}}` are HTML-escaped and `{{{…}}}` are inserted raw; without it (subjects, text)
 * every value is inserted as is. A missing value with no fallback renders as empty. A key is
 * first a flat name (`user.name` is the key "user.name" when there is one), else a path into
 * nested objects (`{{event.orderId}}`); text that is not a tag
 * (`{{ }}`, `{{a?b}}`) is left as written. Inserted values are never scanned again.
 */
export function renderTemplate(template: string, vars: Variables, opts: { escape: boolean }): string {
  return template.replace(TAG, (match, rawInner: string | undefined, inner: string | undefined) => {
    const tag = parseTag(rawInner ?? inner ?? '');
    if (!tag) return match;
    const value = lookup(vars, tag);
    return rawInner === undefined && opts.escape ? escapeHtml(value) : value;
  });
}

/** Keys a template references, each once, in order of first use (for usage reports and validation). */
export function templateVariables(template: string): string[] {
  const keys = new Set<string>();
  for (const m of template.matchAll(TAG)) {
    const tag = parseTag(m[1] ?? m[2] ?? '');
    if (tag) keys.add(tag.key);
  }
  return [...keys];
}

/**
 * A PostgreSQL regular expression matching a use of `key` in a template (`{{key}}`,
 * `{{ key ?? fallback }}`, `{{{key}}}`): usage reports search stored subjects and bodies with it.
 */
export function variableUsePattern(key: string): string {
  const escaped = key.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
  return `\\{\\{\\{?\\s*${escaped}\\s*(\\?\\?|\\}\\})`;
}

/**
 * The plain-text part generated from an HTML body: links kept as "text [url]" (just the url
 * when it is the text), images dropped, lines wrapped at 78 characters, table cells on their
 * own lines (email layouts are tables: inline cells would glue words together).
 *
 * Never throws and stays linear on any input: html-to-text walks its tree recursively (3,000
 * nested elements overflow the stack) and its parser closes tags by scanning the open stack, so
 * HTML nested deeper than MAX_HTML_DEPTH (which the API refuses, but rows stored before the limit
 * may hold) gets the plain tag strip instead, and so does anything the converter still fails on.
 * `depth`: `htmlDepth(html)` when the caller measured it already (delivery refuses deeper HTML
 * first), so the body is not walked twice.
 */
export function htmlToText(html: string, depth: number = htmlDepth(html)): string {
  if (depth > MAX_HTML_DEPTH) return stripTags(html);
  try {
    return toText(html).trim();
  } catch {
    return stripTags(html);
  }
}

const ENTITIES: Record<string, string> = { amp: '&', lt: '<', gt: '>', quot: '"', apos: "'", nbsp: ' ' };

/**
 * Text of `html` without its tags, iteratively and in linear time: each tag becomes a space, the
 * contents of script and style are dropped, common entities decoded, runs of blanks collapsed.
 * The fallback text part: plainer than html-to-text's, but always there.
 */
export function stripTags(html: string): string {
  const parts: string[] = [];
  let i = 0;
  while (i < html.length) {
    const lt = html.indexOf('<', i);
    if (lt === -1) {
      parts.push(html.slice(i));
      break;
    }
    parts.push(html.slice(i, lt));
    const gt = html.indexOf('>', lt + 1);
    if (gt === -1) break; // an unterminated tag at the end
    parts.push(' ');
    const first = html.charCodeAt(lt + 1) | 0x20; // lower-cased letter
    const raw = first === 115 /* s */ ? /^<(script|style)[\s>/]/i.exec(html.slice(lt, lt + 8))?.[1] : undefined;
    const close = raw ? indexOfCaseless(html, `</${raw.toLowerCase()}`, gt + 1) : -1;
    i = raw ? (close === -1 ? html.length : close) : gt + 1;
  }
  return parts
    .join('')
    .replace(/&(#\d{1,7}|#x[\da-f]{1,6}|[a-z]{2,6});/gi, (m, e: string) => decodeEntity(e) ?? m)
    .replace(/[ \t\f\v\u00a0]+/g, ' ')
    .replace(/ ?\n[\s]*/g, '\n')
    .trim();
}

function decodeEntity(e: string): string | undefined {
  if (e[0] !== '#') return ENTITIES[e.toLowerCase()];
  const code = e[1] === 'x' || e[1] === 'X' ? parseInt(e.slice(2), 16) : parseInt(e.slice(1), 10);
  return code > 0 && code <= 0x10ffff && (code < 0xd800 || code > 0xdfff) ? String.fromCodePoint(code) : undefined;
}

/**
 * The converter, compiled once (compiling the options costs more than converting a typical
 * email) and loaded at the first text part: html-to-text and its parsers are ~2 MB of heap a
 * process that sends nothing (ROLE=api) never needs (docs/performance.md "Memory"). Required
 * (its CommonJS build, the same code) so the text part stays synchronous.
 */
let converter: ReturnType<typeof compile> | undefined;
const toText = (html: string): string => (converter ??= createConverter())(html);

const createConverter = () => (createRequire(import.meta.url)('html-to-text') as { compile: typeof compile }).compile({
  wordwrap: 78,
  selectors: [
    { selector: 'img', format: 'skip' },
    { selector: 'a', options: { hideLinkHrefIfSameAsText: true } },
    { selector: 'td', format: 'block', options: { leadingLineBreaks: 1, trailingLineBreaks: 1 } },
    { selector: 'th', format: 'block', options: { leadingLineBreaks: 1, trailingLineBreaks: 1 } },
  ],
});
