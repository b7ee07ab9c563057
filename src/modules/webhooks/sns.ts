import { type KeyObject, verify as verifySignature, X509Certificate } from 'node:crypto';
import { z } from 'zod';

/** An Amazon SNS HTTP(S) message (https://docs.aws.amazon.com/sns/latest/dg/http-message-formats.html). */
export const SnsMessage = z.object({
  Type: z.string(),
  MessageId: z.string(),
  TopicArn: z.string(),
  Message: z.string(),
  Timestamp: z.string(),
  Subject: z.string().nullish(),
  SubscribeURL: z.string().optional(),
  Token: z.string().optional(),
  SignatureVersion: z.string().optional(),
  Signature: z.string().optional(),
  SigningCertURL: z.string().optional(),
});
export type SnsMessage = z.infer<typeof SnsMessage>;

/** The fields SNS signs, in the order it signs them, per message type. */
const SIGNED_FIELDS: Record<string, readonly (keyof SnsMessage)[]> = {
  Notification: ['Message', 'MessageId', 'Subject', 'Timestamp', 'TopicArn', 'Type'],
  SubscriptionConfirmation: ['Message', 'MessageId', 'SubscribeURL', 'Timestamp', 'Token', 'TopicArn', 'Type'],
  UnsubscribeConfirmation: ['Message', 'MessageId', 'SubscribeURL', 'Timestamp', 'Token', 'TopicArn', 'Type'],
};
const OPTIONAL_FIELDS = new Set<keyof SnsMessage>(['Subject']);
const ALGORITHMS: Record<string, string> = { '1': 'sha1', '2': 'sha256' };

/** `Key\nValue\n` for each signed field present; undefined when a required one is missing or the type is unknown. */
export function canonicalString(msg: SnsMessage): string | undefined {
  const fields = SIGNED_FIELDS[msg.Type];
  if (!fields) return undefined;
  let out = '';
  for (const field of fields) {
    const value = msg[field];
    if (value === undefined || value === null) {
      if (OPTIONAL_FIELDS.has(field)) continue;
      return undefined;
    }
    out += `${field}\n${value}\n`;
  }
  return out;
}

/** SNS's own hosts: `sns.<region>.amazonaws.com` (and `.amazonaws.com.cn`). */
const SNS_HOST = /^sns\.[a-z0-9-]+\.amazonaws\.com(\.cn)?$/;

/** True for an https URL on an SNS host (default port, no credentials); `pem` also requires a .pem path. */
export function isSnsUrl(value: string, opts: { pem?: boolean } = {}): boolean {
  let url: URL;
  try {
    url = new URL(value);
  } catch {
    return false;
  }
  return (
    url.protocol === 'https:' &&
    SNS_HOST.test(url.hostname) &&
    url.port === '' &&
    url.username === '' &&
    url.password === '' &&
    (!opts.pem || url.pathname.endsWith('.pem'))
  );
}

/** Fetches a signing certificate (PEM text) from an SNS URL already checked by {@link isSnsUrl}. */
export type CertificateFetcher = (url: string) => Promise<string>;

const MAX_CERT_BYTES = 16 * 1024;

/** The default fetcher: HTTPS GET, no redirects, 5 s timeout, at most 16 KB. */
export const fetchCertificate: CertificateFetcher = async (url) => {
  const res = await fetch(url, { redirect: 'error', signal: AbortSignal.timeout(5_000) });
  if (!res.ok) throw new Error(`certificate fetch answered ${res.status}`);
  const text = await res.text();
  if (text.length > MAX_CERT_BYTES) throw new Error('certificate too large');
  return text;
};

export type SnsVerdict = { ok: true } | { ok: false; reason: string; retryable: boolean };
const refuse = (reason: string): SnsVerdict => ({ ok: false, reason, retryable: false });

/** Certificates kept per URL (SNS rotates them rarely); a failed fetch is not kept. */
const CACHE_SIZE = 20;

/**
 * Verifies SNS signatures (SignatureVersion 1 = SHA1withRSA, 2 = SHA256withRSA over the
 * canonical string) with the certificate at SigningCertURL, which must be on an SNS host.
 * A certificate that cannot be fetched is a retryable failure (the caller answers 5xx so
 * SNS retries); anything else is a refusal.
 */
export function createSnsVerifier(opts: { fetchCertificate?: CertificateFetcher; now?: () => number } = {}) {
  const fetchPem = opts.fetchCertificate ?? fetchCertificate;
  const now = opts.now ?? Date.now;
  const cache = new Map<string, Promise<X509Certificate>>();

  function certificate(url: string): Promise<X509Certificate> {
    let cert = cache.get(url);
    if (!cert) {
      cert = fetchPem(url).then((pem) => new X509Certificate(pem));
      cache.set(url, cert);
      cert.catch(() => cache.delete(url));
      if (cache.size > CACHE_SIZE) cache.delete(cache.keys().next().value ?? '');
    }
    return cert;
  }

  return async function verifySns(msg: SnsMessage): Promise<SnsVerdict> {
    const algorithm = ALGORITHMS[msg.SignatureVersion ?? ''];
    if (!algorithm) return refuse(`unsupported SignatureVersion ${JSON.stringify(msg.SignatureVersion ?? null)}`);
    if (!msg.Signature) return refuse('no Signature');
    if (!msg.SigningCertURL || !isSnsUrl(msg.SigningCertURL, { pem: true })) return refuse('SigningCertURL is not an https .pem URL on an SNS host');
    const data = canonicalString(msg);
    if (data === undefined) return refuse(`message of type ${msg.Type} lacks a signed field`);
    let cert: X509Certificate;
    try {
      cert = await certificate(msg.SigningCertURL);
    } catch (err) {
      return { ok: false, reason: `signing certificate unavailable: ${err instanceof Error ? err.message : String(err)}`, retryable: true };
    }
    const at = now();
    if (at < Date.parse(cert.validFrom) || at > Date.parse(cert.validTo)) return refuse('signing certificate expired or not yet valid');
    const key: KeyObject = cert.publicKey;
    let ok = false;
    try {
      ok = verifySignature(algorithm, Buffer.from(data, 'utf8'), key, Buffer.from(msg.Signature, 'base64'));
    } catch {
      // A key of another kind, or a signature the key cannot parse: not a match.
    }
    return ok ? { ok: true } : refuse('signature does not match');
  };
}
export type SnsVerifier = ReturnType<typeof createSnsVerifier>;

/** Visits a SubscribeURL (already checked by {@link isSnsUrl}) to confirm a subscription. */
export type SubscriptionConfirmer = (url: string) => Promise<void>;

/** The default confirmer: HTTPS GET, no redirects, 10 s timeout. */
export const confirmSubscription: SubscriptionConfirmer = async (url) => {
  const res = await fetch(url, { redirect: 'error', signal: AbortSignal.timeout(10_000) });
  await res.body?.cancel();
  if (!res.ok) throw new Error(`SubscribeURL answered ${res.status}`);
};
