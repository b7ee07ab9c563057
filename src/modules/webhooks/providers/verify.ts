import { createHash, createHmac, createPublicKey, type KeyObject, timingSafeEqual, verify as verifySignature } from 'node:crypto';

/**
 * Signature checks of the relay providers' webhooks (docs/bounces.md, Provider webhooks), all
 * over the request's raw bytes. Each answers a refusal reason, or undefined when the request is
 * authentic and fresh.
 */

/** How far a signed timestamp may be from our clock (Svix's 5 minutes, used for every provider). */
export const TOLERANCE_SECONDS = 300;

const sha256 = (value: Buffer | string) => createHash('sha256').update(value).digest();
/** Constant-time comparison of two strings of any length (digests compared, not the strings). */
const same = (a: string, b: string) => timingSafeEqual(sha256(a), sha256(b));

function stale(timestamp: string | undefined, now: number): string | undefined {
  if (!timestamp || !/^\d{1,12}$/.test(timestamp)) return 'no valid timestamp';
  return Math.abs(now / 1000 - Number(timestamp)) > TOLERANCE_SECONDS ? `timestamp ${timestamp} is more than ${TOLERANCE_SECONDS} s away` : undefined;
}

/**
 * Postmark: no HMAC. Its webhook URL carries HTTP Basic credentials (https://user:password@host/…)
 * and/or the webhook sends a custom header; each one configured must match.
 */
export function checkPostmark(
  headers: Record<string, string | string[] | undefined>,
  cfg: { basic?: { user: string; password: string }; header?: { name: string; value: string } },
): string | undefined {
  if (cfg.basic) {
    const authorization = headers.authorization;
    const match = /^Basic\s+([A-Za-z0-9+/=]+)\s*$/i.exec(typeof authorization === 'string' ? authorization : '');
    if (!match?.[1]) return 'no HTTP Basic credentials';
    if (!same(Buffer.from(match[1], 'base64').toString('utf8'), `${cfg.basic.user}:${cfg.basic.password}`)) return 'wrong HTTP Basic credentials';
  }
  if (cfg.header) {
    const value = headers[cfg.header.name];
    if (typeof value !== 'string') return `no ${cfg.header.name} header`;
    if (!same(value.trim(), cfg.header.value)) return `wrong ${cfg.header.name} header`;
  }
  return undefined;
}

/** Mailgun: `signature` = hex HMAC-SHA256(signing key, timestamp + token), in the body. */
export function checkMailgun(sig: { timestamp?: unknown; token?: unknown; signature?: unknown } | undefined, key: string, now: number): string | undefined {
  const timestamp = typeof sig?.timestamp === 'number' ? String(sig.timestamp) : sig?.timestamp;
  if (typeof timestamp !== 'string' || typeof sig?.token !== 'string' || typeof sig.signature !== 'string') return 'no signature';
  const expected = createHmac('sha256', key).update(timestamp + sig.token).digest('hex');
  if (!same(sig.signature.toLowerCase(), expected)) return 'signature does not match';
  return stale(timestamp, now);
}

/** The SendGrid verification key (base64 DER SubjectPublicKeyInfo, as SendGrid shows it). */
export const sendgridKey = (base64: string): KeyObject => createPublicKey({ key: Buffer.from(base64, 'base64'), format: 'der', type: 'spki' });

/** SendGrid: base64 ECDSA (P-256, SHA-256) signature of timestamp + raw body, in headers. */
export function checkSendgrid(headers: { signature?: string; timestamp?: string }, raw: Buffer, key: KeyObject, now: number): string | undefined {
  if (!headers.signature || !headers.timestamp) return 'no X-Twilio-Email-Event-Webhook-Signature/-Timestamp headers';
  let ok = false;
  try {
    ok = verifySignature('sha256', Buffer.concat([Buffer.from(headers.timestamp, 'utf8'), raw]), key, Buffer.from(headers.signature, 'base64'));
  } catch {
    // A signature the key cannot parse: not a match.
  }
  if (!ok) return 'signature does not match';
  return stale(headers.timestamp, now);
}

/**
 * Resend (Svix): `svix-signature` is a space-separated list of `v1,<base64 HMAC-SHA256(secret,
 * id.timestamp.body)>`; the secret is the base64 after `whsec_`. Standard Webhooks' `webhook-*`
 * header names are taken too.
 */
export function checkSvix(headers: { id?: string; timestamp?: string; signature?: string }, raw: Buffer, secret: string, now: number): string | undefined {
  if (!headers.id || !headers.timestamp || !headers.signature) return 'no svix-id/svix-timestamp/svix-signature headers';
  const key = Buffer.from(secret.replace(/^whsec_/, ''), 'base64');
  const expected = createHmac('sha256', key).update(`${headers.id}.${headers.timestamp}.`).update(raw).digest('base64');
  const given = headers.signature.split(' ').flatMap((part) => {
    const [version, value] = part.split(',', 2);
    return version === 'v1' && value ? [value] : [];
  });
  if (!given.some((value) => same(value, expected))) return 'signature does not match';
  return stale(headers.timestamp, now);
}

/**
 * Delivery ids already applied (Mailgun tokens, Svix ids, SendGrid signatures), kept while their
 * timestamp could still pass the tolerance, at most `max` of them (the oldest go first). Per
 * process: a replay to another API process is still harmless, the shared feedback path being
 * idempotent.
 */
export function createReplayMemory(max = 50_000, ttlMs = 2 * TOLERANCE_SECONDS * 1000) {
  const seen = new Map<string, number>();
  return {
    has(key: string, now: number): boolean {
      const until = seen.get(key);
      return until !== undefined && until > now;
    },
    add(key: string, now: number): void {
      seen.delete(key);
      seen.set(key, now + ttlMs);
      for (const [k, until] of seen) {
        if (seen.size <= max && until > now) break;
        seen.delete(k);
      }
    },
  };
}
export type ReplayMemory = ReturnType<typeof createReplayMemory>;
