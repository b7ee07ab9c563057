import type { Kysely } from 'kysely';
import type { Database } from '../../db/schema.js';
import { isUuid } from '../../lib/uuid.js';
import type { Tokens } from '../../lib/tokens.js';
import { TokenPurpose } from '../../mail/compliance.js';
import { type OpenClient, openSignal } from '../analytics/index.js';
import { lockEmailForClick, recordMilestone } from '../emails/index.js';
import { findSubscriber, insertLinkClick, type SubscriberRef, type SubscriberRow, updateSubscribed } from './tracking.repo.js';

/** The email id of a valid open token; undefined for anything else (tampered, other purpose). */
export function openTokenEmail(tokens: Tokens, token: string): string | undefined {
  const data = tokens.verify(TokenPurpose.open, token);
  return typeof data?.e === 'string' && isUuid(data.e) ? data.e : undefined;
}

/** Email id and target of a valid click token whose target is an http(s) URL. */
export function clickTokenTarget(tokens: Tokens, token: string): { emailId: string; url: string } | undefined {
  const data = tokens.verify(TokenPurpose.click, token);
  if (typeof data?.e !== 'string' || !isUuid(data.e) || typeof data.u !== 'string') return undefined;
  let url: URL;
  try {
    url = new URL(data.u);
  } catch {
    return undefined;
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') return undefined;
  // The parsed form: same URL, but with no raw control or non-ASCII characters for the Location header.
  return { emailId: data.e, url: url.href };
}

/**
 * An open: the first sets opened_at and records email.open, every one bumps open_count.
 * `client` (its User-Agent) tells privacy proxies, prefetchers and scanners apart
 * (docs/analytics.md "Machine opens"): their opens are counted apart from a person's.
 * One transaction, one statement (plus the event insert on the first). Unknown emails
 * (deleted) are ignored.
 */
export async function recordOpen(db: Kysely<Database>, emailId: string, client: OpenClient = {}): Promise<void> {
  const opener = openSignal(client);
  await db.transaction().execute((trx) => recordMilestone(trx, { emailId, status: 'OPENED', opener }));
}

/**
 * A click: the first sets clicked_at and records email.click, every one bumps click_count.
 * A click proves the email was opened (images are often blocked), so an email never opened
 * gets its open recorded first, once; later clicks do not count as opens. Every click also
 * counts for its URL (the email's (email, URL) row and a campaign's link counts: the campaign
 * page's top links), in the same transaction.
 */
export async function recordClick(db: Kysely<Database>, emailId: string, url: string): Promise<void> {
  await db.transaction().execute(async (trx) => {
    const email = await lockEmailForClick(trx, emailId);
    if (!email) return;
    if (!email.opened) await recordMilestone(trx, { emailId, status: 'OPENED' });
    await recordMilestone(trx, { emailId, status: 'CLICKED', data: { url } });
    await insertLinkClick(trx, emailId, url);
  });
}

export type PagePurpose = typeof TokenPurpose.unsubscribe | typeof TokenPurpose.subscribe | typeof TokenPurpose.manage;

/** The ids of a valid page token of this purpose. */
export function pageTokenRef(tokens: Tokens, purpose: PagePurpose, token: string): SubscriberRef | undefined {
  const data = tokens.verify(purpose, token);
  if (typeof data?.p !== 'string' || typeof data.c !== 'string' || !isUuid(data.p) || !isUuid(data.c)) return undefined;
  const e = data.e;
  if (e !== undefined && (typeof e !== 'string' || !isUuid(e))) return undefined;
  return { projectId: data.p, contactId: data.c, emailId: e };
}

/** What a hosted page shows. */
export interface Subscriber {
  ref: SubscriberRef;
  email: string;
  projectName: string;
  subscribed: boolean;
}

const toSubscriber = (ref: SubscriberRef, row: SubscriberRow): Subscriber => ({
  ref,
  email: row.email,
  projectName: row.project_name,
  subscribed: row.subscribed,
});

/** The contact a page token speaks for, or undefined (invalid token, contact gone, ids that do not match). */
export async function findTokenSubscriber(
  db: Kysely<Database>,
  tokens: Tokens,
  purpose: PagePurpose,
  token: string,
): Promise<Subscriber | undefined> {
  const ref = pageTokenRef(tokens, purpose, token);
  if (!ref) return undefined;
  const row = await findSubscriber(db, ref);
  return row && toSubscriber(ref, row);
}

/** Sets the subscription (works for disabled projects too: opting out must always be possible). */
export async function setSubscription(db: Kysely<Database>, subscriber: Subscriber, subscribed: boolean): Promise<Subscriber> {
  await updateSubscribed(db, subscriber.ref, subscribed);
  return { ...subscriber, subscribed };
}

/** Tokens for the links between the hosted pages of one contact. */
export function pageTokens(tokens: Tokens, ref: SubscriberRef): Record<PagePurpose, string> {
  const data = { p: ref.projectId, c: ref.contactId, ...(ref.emailId && { e: ref.emailId }) };
  return {
    unsubscribe: tokens.sign(TokenPurpose.unsubscribe, data),
    subscribe: tokens.sign(TokenPurpose.subscribe, data),
    manage: tokens.sign(TokenPurpose.manage, data),
  };
}
