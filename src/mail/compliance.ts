import type { EmailType, TrackingMode } from '../db/schema.js';
import type { Tokens } from '../lib/tokens.js';
import { escapeHtml } from './render.js';

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

/** The reserved template variables unsubscribeUrl, subscribeUrl and manageUrl of one email. */
export function subscriptionUrls(ctx: LinkContext, deps: { tokens: Tokens; publicUrl: string }): Record<string, string> {
  if (!ctx.contactId) return {};
  const data = { p: ctx.projectId, c: ctx.contactId, e: ctx.emailId };
  return {
    unsubscribeUrl: `${deps.publicUrl}/unsubscribe/${deps.tokens.sign(TokenPurpose.unsubscribe, data)}`,
    subscribeUrl: `${deps.publicUrl}/subscribe/${deps.tokens.sign(TokenPurpose.subscribe, data)}`,
    manageUrl: `${deps.publicUrl}/manage/${deps.tokens.sign(TokenPurpose.manage, data)}`,
  };
}

export function isTracked(ctx: Pick<LinkContext, 'type' | 'tracking'>): boolean {
  return ctx.tracking === 'ENABLED' || (ctx.tracking === 'MARKETING_ONLY' && ctx.type === 'MARKETING');
}

const HREF = /(<a\b[^>]*?\bhref\s*=\s*)(["'])(https?:\/\/[^"']+)\2/gi;

/** Click tracking: http(s) links go through /t/c/<token>, which redirects only to the signed URL. */
function rewriteLinks(html: string, ctx: LinkContext, deps: { tokens: Tokens; publicUrl: string }): string {
  return html.replace(HREF, (match, prefix: string, quote: string, url: string) => {
    const target = url.replace(/&amp;/g, '&');
    if (target.startsWith(`${deps.publicUrl}/unsubscribe/`) || target.startsWith(`${deps.publicUrl}/manage/`)) return match;
    const token = deps.tokens.sign(TokenPurpose.click, { e: ctx.emailId, u: target });
    return `${prefix}${quote}${deps.publicUrl}/t/c/${token}${quote}`;
  });
}

function insertBeforeBodyEnd(html: string, fragment: string): string {
  const at = html.search(/<\/body\s*>/i);
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
 * unsubscribe link of its own.
 */
export function prepareForDelivery(
  html: string,
  ctx: LinkContext,
  deps: { tokens: Tokens; publicUrl: string },
): PreparedContent {
  const headers: Record<string, string> = {};
  let out = html;
  const urls = subscriptionUrls(ctx, deps);
  if (ctx.type === 'MARKETING' && urls.unsubscribeUrl) {
    headers['List-Unsubscribe'] = `<${urls.unsubscribeUrl}>`;
    headers['List-Unsubscribe-Post'] = 'List-Unsubscribe=One-Click';
    if (!out.includes(urls.unsubscribeUrl) && !out.includes(escapeHtml(urls.unsubscribeUrl))) {
      out = insertBeforeBodyEnd(
        out,
        `<p style="font-size:12px;color:#666;text-align:center">You receive this email because you subscribed. <a href="${escapeHtml(urls.unsubscribeUrl)}">Unsubscribe</a></p>`,
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
