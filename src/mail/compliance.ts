import type { Tokens } from '../lib/tokens.js';
import { escapeHtml } from './render.js';

/** An email's type as delivery treats it (the emails table's `type`). */
export type EmailType = 'TRANSACTIONAL' | 'MARKETING' | 'HEADLESS';
/** A project's `tracking` setting. */
export type TrackingMode = 'ENABLED' | 'DISABLED' | 'MARKETING_ONLY';

/** Token purposes of the links the service puts in emails. */
export const TokenPurpose = {
  open: 'open',
  click: 'click',
  unsubscribe: 'unsubscribe',
  subscribe: 'subscribe',
  manage: 'manage',
} as const;

export interface LinkContext {
  emailId: string;
  projectId: string;
  contactId: string | null;
  type: EmailType;
  tracking: TrackingMode;
}

type SubscriptionContext = Pick<LinkContext, 'emailId' | 'projectId' | 'contactId'> & Partial<LinkContext>;

/** The reserved template variables unsubscribeUrl, subscribeUrl and manageUrl of one email. */
export function subscriptionUrls(ctx: SubscriptionContext, deps: { tokens: Tokens; publicUrl: string }): Record<string, string> {
  if (!ctx.contactId) return {};
  const data = { p: ctx.projectId, c: ctx.contactId, e: ctx.emailId };
  return {
    unsubscribeUrl: unsubscribeUrlOf(ctx, deps),
    subscribeUrl: `${deps.publicUrl}/subscribe/${deps.tokens.sign(TokenPurpose.subscribe, data)}`,
    manageUrl: `${deps.publicUrl}/manage/${deps.tokens.sign(TokenPurpose.manage, data)}`,
  };
}

/** subscriptionUrls' unsubscribeUrl alone (the same token: same purpose, same data in the same order). */
function unsubscribeUrlOf(ctx: SubscriptionContext, deps: { tokens: Tokens; publicUrl: string }): string {
  const data = { p: ctx.projectId, c: ctx.contactId, e: ctx.emailId };
  return `${deps.publicUrl}/unsubscribe/${deps.tokens.sign(TokenPurpose.unsubscribe, data)}`;
}

export function isTracked(ctx: Pick<LinkContext, 'type' | 'tracking'>): boolean {
  return ctx.tracking === 'ENABLED' || (ctx.tracking === 'MARKETING_ONLY' && ctx.type === 'MARKETING');
}

/**
 * An opening `<a …>` tag. `[^<>]*` stops at the next angle bracket, so a body of a million
 * unclosed `<a` costs linear time (a lazy `[^>]*?` rescans to the end from every `<a`).
 */
const A_TAG = /<a\s[^<>]*>/gi;
/** The href attribute of one tag (never `data-href`: a space must precede it). */
const HREF = /(\shref\s*=\s*)(?:"([^"]*)"|'([^']*)')/i;
/** Our own links that must reach the recipient unwrapped: hosted pages and tracking. */
const OWN_PATHS = ['/unsubscribe/', '/subscribe/', '/manage/', '/t/'];

/** The URL an attribute value stands for (the entities a serialiser writes for `&`). */
const attributeUrl = (value: string) => value.trim().replace(/&amp;|&#0*38;|&#x0*26;/gi, '&');

/** Click tracking: http(s) links go through /t/c/<token>, which redirects only to the signed URL. */
function rewriteLinks(html: string, ctx: LinkContext, deps: { tokens: Tokens; publicUrl: string }): string {
  const own = OWN_PATHS.map((p) => `${deps.publicUrl}${p}`);
  return html.replace(A_TAG, (tag) =>
    tag.replace(HREF, (match, prefix: string, doubleQuoted?: string, singleQuoted?: string) => {
      const target = attributeUrl(doubleQuoted ?? singleQuoted ?? '');
      if (!/^https?:\/\//i.test(target) || own.some((p) => target.startsWith(p))) return match;
      const token = deps.tokens.sign(TokenPurpose.click, { e: ctx.emailId, u: target });
      return `${prefix}"${deps.publicUrl}/t/c/${token}"`;
    }),
  );
}

/** Inserts before the last `</body>` (or appends when there is none). */
function insertBeforeBodyEnd(html: string, fragment: string): string {
  const at = html.toLowerCase().lastIndexOf('</body');
  return at === -1 ? html + fragment : html.slice(0, at) + fragment + html.slice(at);
}

export interface PreparedContent {
  html: string;
  headers: Record<string, string>;
}

/**
 * What delivery adds to a rendered HTML body: click and open tracking when the project's
 * `tracking` setting covers this email's type, and for MARKETING mail the RFC 8058
 * one-click List-Unsubscribe headers plus an unsubscribe footer when the body carries no
 * unsubscribe link of its own. Links to the hosted pages and mailto:/relative links are
 * never wrapped.
 */
export function prepareForDelivery(
  html: string,
  ctx: LinkContext,
  deps: { tokens: Tokens; publicUrl: string },
): PreparedContent {
  const headers: Record<string, string> = {};
  let out = html;
  // Only MARKETING mail carries a subscription link: no token is signed for the others (each
  // signature is an HMAC, at every delivery); the URL is the one subscriptionUrls gives.
  const unsubscribeUrl = ctx.type === 'MARKETING' && ctx.contactId ? unsubscribeUrlOf(ctx, deps) : undefined;
  if (unsubscribeUrl) {
    headers['List-Unsubscribe'] = `<${unsubscribeUrl}>`;
    headers['List-Unsubscribe-Post'] = 'List-Unsubscribe=One-Click';
    if (!out.includes(unsubscribeUrl) && !out.includes(escapeHtml(unsubscribeUrl))) {
      out = insertBeforeBodyEnd(
        out,
        `<p style="font-size:12px;color:#666;text-align:center">You receive this email because you subscribed. <a href="${escapeHtml(unsubscribeUrl)}">Unsubscribe</a></p>`,
      );
    }
  }
  if (isTracked(ctx)) {
    out = rewriteLinks(out, ctx, deps);
    const pixel = `${deps.publicUrl}/t/o/${deps.tokens.sign(TokenPurpose.open, { e: ctx.emailId })}`;
    out = insertBeforeBodyEnd(out, `<img src="${pixel}" width="1" height="1" alt="" style="display:none">`);
  }
  return { html: out, headers };
}
