import { escapeHtml } from '../../mail/render.js';
import type { ProjectRole } from '../../db/schema.js';

/** What an invitation email says (plain, with its text part): who invites, to what, the link, the expiry. */
export function invitationEmail(input: {
  to: string;
  projectName: string;
  inviterEmail: string;
  role: ProjectRole;
  link: string;
  expiresAt: Date;
  host: string;
}): { to: string; subject: string; text: string; html: string } {
  // The project name is the inviter's text: one line, bounded, quoted, never markup.
  const project = input.projectName.replace(/\s+/g, ' ').slice(0, 100);
  const expires = input.expiresAt.toUTCString();
  const text = [
    `${input.inviterEmail} invited you to join the project "${project}" on ${input.host} as ${input.role}.`,
    `Accept the invitation:\n${input.link}`,
    `Sign up or sign in with this address (${input.to}) to join. The link expires on ${expires}.`,
    `If you did not expect this invitation, ignore this email: nothing happens unless you accept it.`,
  ].join('\n\n');
  const p = (s: string) => `<p>${s}</p>`;
  const html = [
    '<!doctype html><html><body style="font-family:sans-serif;line-height:1.5">',
    p(`${escapeHtml(input.inviterEmail)} invited you to join the project &ldquo;${escapeHtml(project)}&rdquo; on ${escapeHtml(input.host)} as ${input.role}.`),
    p(`<a href="${escapeHtml(input.link)}">Accept the invitation</a>`),
    p(`Sign up or sign in with this address (${escapeHtml(input.to)}) to join. The link expires on ${escapeHtml(expires)}.`),
    p('If you did not expect this invitation, ignore this email: nothing happens unless you accept it.'),
    '</body></html>',
  ].join('\n');
  return { to: input.to, subject: `You are invited to join ${project} on ${input.host}`, text, html };
}
