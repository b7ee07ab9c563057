import { escapeHtml } from '../../mail/render.js';
import type { SystemEmail } from '../emails/index.js';

/**
 * The account emails of this module (verification, password reset): plain, readable, a text part written for people and a
 * small HTML part saying the same. Links are `PUBLIC_URL/app/<page>?token=…` (DESIGN §4).
 */

type AccountEmail = Omit<SystemEmail, 'to'>;

/** A dashboard link carrying a token. */
const appLink = (publicUrl: string, page: string, token: string): string => `${publicUrl}/app/${page}?token=${encodeURIComponent(token)}`;

function html(paragraphs: readonly string[], link?: { url: string; label: string }): string {
  const body = paragraphs.map((p) => `<p>${escapeHtml(p)}</p>`);
  if (link) {
    const url = escapeHtml(link.url);
    body.splice(1, 0, `<p><a href="${url}">${escapeHtml(link.label)}</a></p>`, `<p style="color:#555;font-size:13px">Or paste this address into your browser:<br>${url}</p>`);
  }
  return `<!doctype html><html><body style="font-family:sans-serif;line-height:1.5;max-width:560px">\n${body.join('\n')}\n</body></html>`;
}

const host = (publicUrl: string) => new URL(publicUrl).host;

export function verificationEmail(opts: { publicUrl: string; token: string }): AccountEmail {
  const url = appLink(opts.publicUrl, 'verify-email', opts.token);
  const intro = `Confirm that this is your email address to finish setting up your account on ${host(opts.publicUrl)}.`;
  const outro = 'The link works once and expires in 24 hours. If you did not create an account, ignore this email.';
  return {
    kind: 'verify-email',
    subject: 'Confirm your email address',
    text: `${intro}\n\nOpen this link to confirm it:\n${url}\n\n${outro}\n`,
    html: html([intro, outro], { url, label: 'Confirm my email address' }),
  };
}

export function passwordResetEmail(opts: { publicUrl: string; token: string }): AccountEmail {
  const url = appLink(opts.publicUrl, 'reset-password', opts.token);
  const intro = `Someone asked to reset the password of your account on ${host(opts.publicUrl)}.`;
  const outro =
    'The link works once and expires in 1 hour. Choosing a new password signs out every other browser. ' +
    'If you did not ask for this, ignore this email: your password stays as it is.';
  return {
    kind: 'password-reset',
    subject: 'Reset your password',
    text: `${intro}\n\nOpen this link to choose a new password:\n${url}\n\n${outro}\n`,
    html: html([intro, outro], { url, label: 'Choose a new password' }),
  };
}
