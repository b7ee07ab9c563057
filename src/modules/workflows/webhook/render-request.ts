/**
 * `{{key}}` in a WEBHOOK step's URL, headers and body. The tag grammar is the template
 * language's (src/mail/render.ts: `{{key}}`, `{{key ?? fallback}}`; `{{{key}}}` means the same
 * here: nothing is inserted unencoded), but keys are paths into the variables
 * (`contact.data.plan`, `event.orderId`, `context.x`), and each position encodes the value for
 * itself: URL-encoded in the URL, CR/LF-free in headers, JSON values inside the parsed body.
 */

/** What a WEBHOOK step's templates can read. */
export interface WebhookVariables {
  contact: { id: string; email: string; subscribed: boolean; data: Record<string, unknown> };
  event: Record<string, unknown>;
  context: Record<string, unknown>;
  workflow: { id: string; name: string };
  execution: { id: string; startedAt: string };
}

const TAG = /\{\{\{([^{}]*)\}\}\}|\{\{([^{}]*)\}\}/g;
/** A text that is exactly one tag. */
export const WHOLE_TAG = /^(?:\{\{\{([^{}]*)\}\}\}|\{\{([^{}]*)\}\})$/;

interface Tag {
  path: string[];
  fallback: string | undefined;
}

/** As render.ts: `key` or `key ?? fallback`; undefined when the text is not a tag (`{{ }}`, `{{a?b}}`). */
function parseTag(inner: string): Tag | undefined {
  const at = inner.indexOf('??');
  const key = (at === -1 ? inner : inner.slice(0, at)).trim();
  if (key === '' || key.includes('?')) return undefined;
  const raw = at === -1 ? undefined : inner.slice(at + 2).trim();
  const fallback = raw !== undefined && raw.length >= 2 && (raw[0] === '"' || raw[0] === "'") && raw.at(-1) === raw[0] ? raw.slice(1, -1) : raw;
  return { path: key.split('.'), fallback };
}

/** The value at a path; own properties only (`{{contact.constructor}}` is missing). */
function valueAt(vars: WebhookVariables, path: readonly string[]): unknown {
  let value: unknown = vars;
  for (const key of path) {
    if (typeof value !== 'object' || value === null) return undefined;
    value = Object.getOwnPropertyDescriptor(value, key)?.value;
  }
  return value;
}

const isMissing = (v: unknown) => v === undefined || v === null || v === '';

/** A value as text: strings as they are, objects and arrays as JSON. */
function asText(v: unknown): string {
  if (typeof v === 'string') return v;
  if (typeof v === 'object') return JSON.stringify(v);
  return String(v);
}

function renderText(template: string, vars: WebhookVariables, encode: (value: string) => string): string {
  return template.replace(TAG, (match, rawInner: string | undefined, inner: string | undefined) => {
    const tag = parseTag(rawInner ?? inner ?? '');
    if (!tag) return match;
    const value = valueAt(vars, tag.path);
    return encode(isMissing(value) ? (tag.fallback ?? '') : asText(value));
  });
}

/**
 * The URL with each value percent-encoded (encodeURIComponent: `&`, `/`, `?`, `#`, `=`, space
 * and non-ASCII all escaped), so a value stays one path segment or one query value.
 */
export const renderUrl = (template: string, vars: WebhookVariables): string => renderText(template, vars, encodeURIComponent);

/**
 * A header value: values inserted as they are, then control characters (CR, LF, NUL…) removed
 * from the whole value, so nothing can start a new header; characters beyond ASCII are sent as
 * their UTF-8 bytes.
 */
export function renderHeaderValue(template: string, vars: WebhookVariables): string {
  // eslint-disable-next-line no-control-regex -- control characters are exactly what is removed
  const clean = renderText(template, vars, (v) => v).replace(/[\u0000-\u0008\u000a-\u001f\u007f]/g, '');
  return Buffer.from(clean, 'utf8').toString('latin1');
}

/**
 * A JSON body template with its values filled in, as a structure (never by pasting text into
 * JSON): a string that is exactly one tag becomes that variable's JSON value (an object, a
 * number…; missing: the fallback string, else null); tags inside longer strings insert the
 * value as text. Object keys are not rendered.
 */
export function renderJson(template: unknown, vars: WebhookVariables): unknown {
  if (typeof template === 'string') {
    const whole = WHOLE_TAG.exec(template);
    const tag = whole ? parseTag(whole[1] ?? whole[2] ?? '') : undefined;
    if (tag) {
      const value = valueAt(vars, tag.path);
      if (value === undefined || value === null || value === '') return tag.fallback ?? (value === '' ? '' : null);
      return value;
    }
    return renderText(template, vars, (v) => v);
  }
  if (Array.isArray(template)) return template.map((item) => renderJson(item, vars));
  if (typeof template === 'object' && template !== null) {
    return Object.fromEntries(Object.entries(template).map(([k, v]) => [k, renderJson(v, vars)]));
  }
  return template;
}

/** DESIGN §9: the body sent when the step has no `body`. */
export function defaultBody(vars: WebhookVariables): unknown {
  const { contact, workflow, execution } = vars;
  return {
    workflow: { id: workflow.id, name: workflow.name },
    execution: { id: execution.id, startedAt: execution.startedAt },
    contact: { id: contact.id, email: contact.email, subscribed: contact.subscribed, data: contact.data },
    event: vars.event,
    context: vars.context,
  };
}
