import { z } from 'zod';
import { isReservedEventName } from '../events/index.js';

/** The email events a workflow can start on or wait for (src/modules/emails/status.ts; email.received: docs/bounces.md "Inbound mail"). */
export const EMAIL_EVENT_NAMES = ['email.sent', 'email.delivery', 'email.open', 'email.click', 'email.bounce', 'email.complaint', 'email.received'] as const;
const SYSTEM_NAMES: ReadonlySet<string> = new Set([...EMAIL_EVENT_NAMES, 'contact.subscribed', 'contact.unsubscribed']);
/** `segment.<slug>.entry|exit`, the slug as segments make it (lower-case alphanumerics and `-`). */
const SEGMENT_EVENT = /^segment\.[a-z0-9]+(-[a-z0-9]+)*\.(entry|exit)$/;

/**
 * Why a name cannot trigger a workflow (or be waited for), or undefined when it can: any name a
 * caller can track, plus the service's own contact.subscribed/unsubscribed, segment.<slug>.entry/exit
 * and email lifecycle events. Other reserved names (email.whatever) are never recorded.
 */
export function eventNameProblem(name: string): string | undefined {
  if (name.trim() === '') return 'Event name must not be blank';
  if (name.includes('\u0000')) return 'Event name must not contain NUL characters';
  if (!isReservedEventName(name)) return undefined;
  if (SYSTEM_NAMES.has(name) || SEGMENT_EVENT.test(name)) return undefined;
  return `"${name}" is reserved and never recorded: use a tracked name, contact.subscribed, contact.unsubscribed, segment.<slug>.entry|exit or ${EMAIL_EVENT_NAMES.join(', ')}`;
}

export const WorkflowEventName = z
  .string()
  .min(1)
  .max(255)
  .superRefine((name, ctx) => {
    const problem = eventNameProblem(name);
    if (problem) ctx.addIssue({ code: 'custom', message: problem, params: { code: 'invalid_event' } });
  })
  .describe(`A tracked event name, contact.subscribed, contact.unsubscribed, segment.<slug>.entry|exit, or ${EMAIL_EVENT_NAMES.join(', ')}`);
