import http from 'node:http';
import https from 'node:https';
import { readExcerpt, requestTarget, statusError } from '../../lib/outgoing-http.js';
import { bareHost, type LookupAll, type ResolvedAddress, resolveTarget } from '../../lib/ssrf.js';
import { signatureHeader } from '../../lib/webhook-signature.js';

const USER_AGENT = 'mailplatform-webhooks/1.0 (webhook endpoint)';
/** Per call, from the first byte sent to the last byte of the answer (DESIGN §9). */
export const CALL_TIMEOUT_MS = 10_000;
/** Sockets per host:port, shared by the endpoints of a process (the per-endpoint call bound is the deliverer's). */
const SOCKETS_PER_HOST = 10;

/** Keep-alive connections: a busy endpoint is called over a few warm sockets instead of one handshake per event. */
const agents = {
  http: new http.Agent({ keepAlive: true, maxSockets: SOCKETS_PER_HOST, maxFreeSockets: SOCKETS_PER_HOST, timeout: 30_000 }),
  https: new https.Agent({ keepAlive: true, maxSockets: SOCKETS_PER_HOST, maxFreeSockets: SOCKETS_PER_HOST, timeout: 30_000 }),
};

/** What one call did, shaped for the delivery log. */
export interface CallOutcome {
  /** 2xx. */
  ok: boolean;
  statusCode: number | null;
  /** The start of the answer (readExcerpt: at most 1,000 characters); null without one. */
  excerpt: string | null;
  /** Why it failed; null on success. */
  error: string | null;
  durationMs: number;
  /** Cut short by a worker shutdown (not the endpoint's fault): the caller tries it again later. */
  interrupted: boolean;
}

/**
 * The address to call for `url`: its host resolved now, every address checked by the SSRF guard
 * (src/lib/ssrf.ts) unless `allowPrivate`. Throws BlockedAddressError for a refused address, or
 * an Error when the host does not resolve within `timeoutMs`.
 */
export async function resolveEndpoint(url: URL, opts: { lookup: LookupAll; allowPrivate: boolean; timeoutMs?: number }): Promise<ResolvedAddress> {
  const timeoutMs = opts.timeoutMs ?? CALL_TIMEOUT_MS;
  let timer: NodeJS.Timeout | undefined;
  const deadline = new Promise<never>((_resolve, reject) => {
    timer = setTimeout(() => reject(new Error(`${bareHost(url.hostname)} did not resolve within ${timeoutMs / 1000} s`)), timeoutMs);
  });
  try {
    return await Promise.race([resolveTarget(url.hostname, { lookup: opts.lookup, allowPrivate: opts.allowPrivate }), deadline]);
  } finally {
    clearTimeout(timer);
  }
}

export interface SignedPost {
  url: URL;
  /** The checked address (resolveEndpoint): the connection goes there and nowhere else. */
  address: ResolvedAddress;
  /** The exact JSON text sent and signed. */
  body: string;
  /** The endpoint's `whsec_…` secret. */
  secret: string;
  /** `X-Webhook-Id`: the event's id, the same on every attempt. */
  webhookId: string;
  eventType: string;
  /** Aborts the call (worker shutdown). */
  signal?: AbortSignal;
  timeoutMs?: number;
  /** Unix time in ms for the signature; default Date.now. */
  now?: () => number;
}

/**
 * POSTs one signed event (DESIGN §9: `X-Signature: t=…,v1=…`, `X-Webhook-Id`) over a keep-alive
 * connection to the checked address. Redirects are not followed (a 3xx is a failure, so no
 * redirect can lead to a private address). Never throws: the outcome says what happened.
 */
export function postSigned(p: SignedPost): Promise<CallOutcome> {
  const started = performance.now();
  const timeoutMs = p.timeoutMs ?? CALL_TIMEOUT_MS;
  const timeout = AbortSignal.timeout(timeoutMs);
  const signal = p.signal ? AbortSignal.any([timeout, p.signal]) : timeout;
  const headers = {
    'Content-Type': 'application/json',
    'Content-Length': String(Buffer.byteLength(p.body)),
    'User-Agent': USER_AGENT,
    'X-Webhook-Id': p.webhookId,
    'X-Webhook-Event': p.eventType,
    'X-Signature': signatureHeader(p.secret, p.body, (p.now ?? Date.now)() / 1000),
  };
  const outcome = (o: Omit<CallOutcome, 'durationMs' | 'interrupted'>): CallOutcome => ({
    ...o,
    durationMs: Math.round(performance.now() - started),
    interrupted: !o.ok && p.signal?.aborted === true && !timeout.aborted,
  });
  return new Promise<CallOutcome>((resolve) => {
    const { url } = p;
    const secure = url.protocol === 'https:';
    const fail = (err: unknown) => {
      const error = timeout.aborted
        ? `no complete answer within ${timeoutMs / 1000} s`
        : p.signal?.aborted
          ? 'interrupted: the worker is shutting down'
          : err instanceof Error ? err.message : String(err);
      resolve(outcome({ ok: false, statusCode: null, excerpt: null, error }));
    };
    const req = (secure ? https : http).request(
      { ...requestTarget(url, p.address), method: 'POST', headers, agent: secure ? agents.https : agents.http, signal },
      (res) => {
        const statusCode = res.statusCode ?? 0;
        readExcerpt(res).then((excerpt) => {
          const error = statusError(statusCode);
          resolve(outcome({ ok: error === null, statusCode, excerpt, error }));
        }, fail);
      },
    );
    req.on('error', fail);
    req.end(Buffer.from(p.body, 'utf8'));
  });
}
