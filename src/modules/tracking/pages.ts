import { escapeHtml } from '../../mail/render.js';

/**
 * The hosted subscription pages: plain HTML5 that works without JavaScript or external
 * resources, readable by screen readers (a landmark, a heading, a labelled status), with
 * every value from contact or project data escaped.
 */

/** Headers of every hosted page: nothing loads but inline styles, forms post only to us, no framing, no caching. */
export const PAGE_HEADERS = {
  'content-type': 'text/html; charset=utf-8',
  'content-security-policy': "default-src 'none'; style-src 'unsafe-inline'; form-action 'self'",
  'x-frame-options': 'DENY',
  'cache-control': 'no-store',
  'referrer-policy': 'no-referrer',
  'x-content-type-options': 'nosniff',
} as const;

const STYLE = `
body{margin:0;font:16px/1.5 system-ui,-apple-system,"Segoe UI",Roboto,sans-serif;color:#1a1a1a;background:#f4f4f5}
main{max-width:32rem;margin:4rem auto;padding:2rem;background:#fff;border-radius:8px}
h1{font-size:1.5rem;margin-top:0}
button{font:inherit;padding:.6rem 1.2rem;border:0;border-radius:6px;background:#1d4ed8;color:#fff;cursor:pointer}
button:focus-visible,a:focus-visible{outline:3px solid #f59e0b;outline-offset:2px}
a{color:#1d4ed8}
.muted{color:#52525b;font-size:.9rem}`;

function layout(title: string, body: string): string {
  return `<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta name="robots" content="noindex, nofollow">
<title>${escapeHtml(title)}</title>
<style>${STYLE}</style>
</head>
<body>
<main>
<h1>${escapeHtml(title)}</h1>
${body}
</main>
</body>
</html>
`;
}

const strong = (value: string) => `<strong>${escapeHtml(value)}</strong>`;
const status = (message: string) => `<p role="status">${message}</p>`;

/** A form posting back to the page's own URL (no action attribute: right behind any proxy). */
function form(button: string, fields: Record<string, string> = {}): string {
  const hidden = Object.entries(fields)
    .map(([name, value]) => `<input type="hidden" name="${escapeHtml(name)}" value="${escapeHtml(value)}">`)
    .join('');
  return `<form method="post">${hidden}<button type="submit">${escapeHtml(button)}</button></form>`;
}

export interface PageContact {
  email: string;
  projectName: string;
}

export function unsubscribePage(c: PageContact): string {
  return layout(
    'Unsubscribe',
    `<p>Unsubscribe ${strong(c.email)} from marketing emails of ${strong(c.projectName)}?</p>
${form('Unsubscribe')}
<p class="muted">You will still receive emails about your account, such as receipts and password resets.</p>`,
  );
}

export function unsubscribedPage(c: PageContact, links: { subscribe: string; manage: string }): string {
  return layout(
    'You are unsubscribed',
    `${status(`${strong(c.email)} will no longer receive marketing emails from ${strong(c.projectName)}.`)}
<p>Unsubscribed by mistake? <a href="${escapeHtml(links.subscribe)}">Subscribe again</a>.</p>
<p class="muted"><a href="${escapeHtml(links.manage)}">Manage your subscription</a></p>`,
  );
}

export function subscribePage(c: PageContact): string {
  return layout(
    'Subscribe',
    `<p>Subscribe ${strong(c.email)} to emails of ${strong(c.projectName)}?</p>
${form('Subscribe')}`,
  );
}

export function subscribedPage(c: PageContact, links: { unsubscribe: string; manage: string }): string {
  return layout(
    'You are subscribed',
    `${status(`${strong(c.email)} will receive emails from ${strong(c.projectName)}.`)}
<p class="muted">Changed your mind? <a href="${escapeHtml(links.unsubscribe)}">Unsubscribe</a> · <a href="${escapeHtml(links.manage)}">Manage your subscription</a></p>`,
  );
}

/** The manage page: the current state and the button that changes it; `notice` after a change. */
export function managePage(c: PageContact & { subscribed: boolean }, notice?: string): string {
  const state = c.subscribed
    ? `${strong(c.email)} is <strong>subscribed</strong> to emails of ${strong(c.projectName)}.`
    : `${strong(c.email)} is <strong>unsubscribed</strong> from marketing emails of ${strong(c.projectName)}.`;
  return layout(
    'Manage your subscription',
    `${notice ? status(escapeHtml(notice)) : ''}
<p>${state}</p>
${c.subscribed ? form('Unsubscribe', { action: 'unsubscribe' }) : form('Subscribe', { action: 'subscribe' })}`,
  );
}

export function notFoundPage(): string {
  return layout(
    'Link not valid',
    `<p>This link is not valid. It may have been copied incompletely, or the subscription it was for no longer exists.</p>`,
  );
}
