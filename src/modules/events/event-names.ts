/**
 * Names the service records itself; callers cannot track them (SPEC /v1/track rule 1):
 * `email.*`, `contact.subscribed`, `contact.unsubscribed`, `segment.<slug>.entry|exit`.
 */
export function isReservedEventName(name: string): boolean {
  const n = name.trim().toLowerCase();
  return (
    n.startsWith('email.') ||
    n === 'contact.subscribed' ||
    n === 'contact.unsubscribed' ||
    /^segment\..+\.(entry|exit)$/.test(n)
  );
}

export const RESERVED_EVENT_CODE = 'reserved_event';
export const RESERVED_EVENT_MESSAGE =
  'This event name is reserved for events the service records itself (email.*, contact.subscribed, contact.unsubscribed, segment.<slug>.entry/exit)';

/** Names the service records itself and no caller can: the `system` flag of name lists. */
export const isSystemEventName = isReservedEventName;

/**
 * Names DELETE /events/:eventName refuses: the system namespaces `email.*`, `contact.*`
 * (wider than track's two reserved names, so events the service may add there stay intact)
 * and `segment.<slug>.entry|exit`.
 */
export function isProtectedEventName(name: string): boolean {
  const n = name.trim().toLowerCase();
  return isReservedEventName(n) || n.startsWith('contact.');
}
