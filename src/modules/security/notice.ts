import type { SuspensionSource } from '../../db/schema.js';

/** The project-disabled email to each OWNER and ADMIN (plain text; the HTML is made from it). */
export function suspensionNotice(input: { projectId: string; projectName: string; source: SuspensionSource; reason: string }): {
  subject: string;
  text: string;
} {
  const name = input.projectName.replace(/[\r\n]+/g, ' ').trim();
  const why =
    input.source === 'AUTOMATIC'
      ? 'Its bounce or complaint numbers reached a critical level, which puts the deliverability of every sender on this instance at risk.'
      : input.source === 'BILLING'
        ? 'A payment for it failed.'
        : 'An operator of this instance disabled it.';
  const text = [
    `Your project "${name}" (${input.projectId}) has been disabled.`,
    `Reason: ${input.reason}`,
    why,
    'While it is disabled, its API keys answer 403 PROJECT_DISABLED, its queued emails are cancelled and its workflows are stopped. Contacts, templates and history are kept.',
    `The numbers behind this decision are on the project's security page (GET /projects/${input.projectId}/security). Clean your lists (remove addresses that bounce, send only to people who asked for your mail), then ask the operator of this instance to lift the suspension.`,
  ].join('\n\n');
  return { subject: `Project "${name.slice(0, 100)}" has been disabled`, text };
}
