import type { Tokens } from '../lib/tokens.js';
import { subscriptionUrls } from './compliance.js';
import { renderTemplate } from './render.js';

/**
 * The one rendering entry point of every sender (/v1/send, campaign emails at delivery, campaign
 * test sends, workflow steps): a subject and an HTML body filled for one recipient. The text
 * part is generated at delivery from the final HTML (`htmlToText`, after tracking and footer).
 */

/** One recipient of a rendering. */
export interface RenderRecipient {
  emailId: string;
  projectId: string;
  /** Null: no contact (a test send to an address that is not one); no subscription links then. */
  contactId: string | null;
  email: string;
  /** The contact's data (null or omitted: none). */
  data?: Record<string, unknown> | null;
  /** One-off values (a request's data, a workflow's variables): they win over the contact's data. */
  values?: Record<string, unknown>;
}

export interface RenderedContent {
  subject: string;
  html: string;
}

/**
 * Variables: the contact's data, then the one-off values, then the reserved `email`,
 * `unsubscribeUrl`, `subscribeUrl` and `manageUrl` (which no data can override). Nested objects
 * are reached with dotted keys (`{{event.orderId}}`). HTML values are escaped (`{{{raw}}}` not);
 * a line break a value brings into the subject becomes a space (no header injection).
 */
export function renderForRecipient(
  content: RenderedContent,
  r: RenderRecipient,
  deps: { tokens: Tokens; publicUrl: string },
): RenderedContent {
  const vars: Record<string, unknown> = { ...(r.data ?? {}), ...r.values, email: r.email };
  if (r.contactId) defineSubscriptionUrls(vars, { emailId: r.emailId, projectId: r.projectId, contactId: r.contactId }, deps);
  return {
    subject: renderTemplate(content.subject, vars, { escape: false }).replace(/[\r\n]+/g, ' '),
    html: renderTemplate(content.html, vars, { escape: true }),
  };
}

const URL_KEYS = ['unsubscribeUrl', 'subscribeUrl', 'manageUrl'] as const;

/**
 * The reserved URL variables as own properties of `vars` (over any data of the same name) whose
 * signed tokens are made at the first read: most bodies name none of them (an HMAC each, ~25 µs
 * of the API's CPU per /v1/send recipient when all three were signed up front).
 */
function defineSubscriptionUrls(
  vars: Record<string, unknown>,
  ctx: { emailId: string; projectId: string; contactId: string },
  deps: { tokens: Tokens; publicUrl: string },
): void {
  let urls: Record<string, string> | undefined;
  for (const key of URL_KEYS) {
    Object.defineProperty(vars, key, { enumerable: true, configurable: true, get: () => (urls ??= subscriptionUrls(ctx, deps))[key] });
  }
}
