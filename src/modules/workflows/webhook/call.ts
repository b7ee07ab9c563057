import http from 'node:http';
import https from 'node:https';
import { signatureHeader } from '../../../lib/webhook-signature.js';
import { defaultBody, renderHeaderValue, renderJson, renderUrl, type WebhookVariables, WHOLE_TAG } from './render-request.js';
import { readExcerpt, requestTarget, safeUrl, statusError } from '../../../lib/outgoing-http.js';
import { BlockedAddressError, type LookupAll, type ResolvedAddress, resolveTarget, systemLookup } from '../../../lib/ssrf.js';

export const WEBHOOK_METHODS = ['GET', 'POST', 'PUT', 'PATCH', 'DELETE'] as const;
export type WebhookMethod = (typeof WEBHOOK_METHODS)[number];

/** One WEBHOOK step call: the step's config, its variables, and how to sign and guard it. */
export interface WebhookInput {
  /** `{{…}}` values are URL-encoded. http: or https: only. */
  url: string;
  /** Default POST. GET and DELETE send no body. */
  method?: string;
  /** Values rendered with CR/LF removed; names are literal. Our own headers cannot be replaced. */
  headers?: Record<string, string>;
  /** A JSON template (any JSON value; a string holding a JSON object/array is parsed); absent: DESIGN §9's default body. */
  body?: unknown;
  variables: WebhookVariables;
  /** The project's `whsec_…` secret. */
  secret: string;
  /** `X-Webhook-Id`: the step execution's id, the same on every attempt (receivers de-duplicate on it). */
  webhookId: string;
  /** WEBHOOK_ALLOW_PRIVATE: skip the private-address refusal. */
  allowPrivate: boolean;
}

/** Injection points; production passes `{}`. */
export interface WebhookDeps {
  /** Host name → all its addresses. Default: the system resolver (dns.lookup, all addresses). */
  lookup?: LookupAll;
  /** Per attempt, DNS to the last byte of the answer. Default 10,000 ms. */
  timeoutMs?: number;
  /** Waits before the 2nd, 3rd… attempt; its length + 1 is the number of attempts. Default [500, 2000]. */
  retryDelaysMs?: readonly number[];
  /** Unix time in ms, for the signature. Default Date.now. */
  now?: () => number;
}

/** The outcome, shaped for the step execution's output/error/attempts columns. */
export interface WebhookResult {
  /** 2xx. */
  ok: boolean;
  /** The last answer's status; null when no answer came (refused, timeout, connection error). */
  status: number | null;
  /** At most 1,000 characters of the last answer's body; null without an answer. */
  bodyExcerpt: string | null;
  /** Why it failed; null on success. */
  error: string | null;
  /** Requests tried (0 when the step's config could not be turned into a request). */
  attempts: number;
  method: WebhookMethod | null;
  /** The rendered URL without its credentials (safe to store and show). */
  url: string | null;
  durationMs: number;
}

export const USER_AGENT = 'mailplatform-webhooks/1.0 (workflow WEBHOOK step)';
const DEFAULT_TIMEOUT_MS = 10_000;
const DEFAULT_RETRY_DELAYS_MS = [500, 2_000] as const;
/** Headers the step cannot set: ours (signature, id, framing) and what the connection decides. */
const RESERVED_HEADERS = new Set(['x-signature', 'x-webhook-id', 'content-length', 'content-type', 'transfer-encoding', 'host', 'connection', 'user-agent']);
const HEADER_NAME = /^[!#$%&'*+.^_`|~0-9A-Za-z-]+$/;

interface Prepared {
  url: URL;
  method: WebhookMethod;
  headers: Record<string, string>;
  body: string | undefined;
}

class ConfigProblem extends Error {}

function prepare(input: WebhookInput): Prepared {
  const method = (input.method ?? 'POST').toUpperCase();
  const m = WEBHOOK_METHODS.find((known) => known === method);
  if (!m) throw new ConfigProblem(`method ${method} is not one of ${WEBHOOK_METHODS.join(', ')}`);
  let url: URL;
  try {
    url = new URL(renderUrl(input.url, input.variables));
  } catch {
    throw new ConfigProblem('the URL is not valid once its variables are filled in');
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') throw new ConfigProblem(`only http and https URLs are called, not ${url.protocol}`);
  const headers: Record<string, string> = {};
  for (const [name, template] of Object.entries(input.headers ?? {})) {
    if (!HEADER_NAME.test(name)) throw new ConfigProblem(`"${name}" is not a valid header name`);
    if (RESERVED_HEADERS.has(name.toLowerCase())) continue;
    headers[name] = renderHeaderValue(template, input.variables);
  }
  const body = m === 'GET' || m === 'DELETE' ? undefined : JSON.stringify(bodyValue(input));
  return { url, method: m, headers, body };
}

/**
 * The JSON value to send: the rendered template, or the default body. A string that holds a JSON
 * object or array (an editor's text box) is parsed first; any other string is a JSON string.
 */
function bodyValue(input: WebhookInput): unknown {
  if (input.body === undefined) return defaultBody(input.variables);
  if (typeof input.body === 'string' && /^\s*[[{]/.test(input.body) && !WHOLE_TAG.test(input.body.trim())) {
    try {
      return renderJson(JSON.parse(input.body), input.variables);
    } catch {
      throw new ConfigProblem('the body looks like JSON but does not parse (a value goes in as "{{key}}", quoted)');
    }
  }
  return renderJson(input.body, input.variables);
}

type AttemptResult = { kind: 'answer'; status: number; excerpt: string } | { kind: 'failed'; error: string; retryable: boolean };

function send(p: Prepared, target: ResolvedAddress, headers: Record<string, string>, signal: AbortSignal): Promise<{ status: number; excerpt: string }> {
  return new Promise((resolve, reject) => {
    const { url } = p;
    const req = (url.protocol === 'https:' ? https : http).request({ ...requestTarget(url, target), method: p.method, headers, agent: false, signal }, (res) => {
      const status = res.statusCode ?? 0;
      readExcerpt(res).then((excerpt) => resolve({ status, excerpt }), reject);
    });
    req.on('error', reject);
    // A Buffer, not a string: Node writes the header block with the first chunk's encoding, and
    // utf8 would encode the (already UTF-8, latin1-carried) header values a second time.
    req.end(p.body === undefined ? undefined : Buffer.from(p.body, 'utf8'));
  });
}

/** Rejects when `signal` aborts, so an unabortable step (dns.lookup) still ends on time. */
function untilAborted<T>(work: Promise<T>, signal: AbortSignal): Promise<T> {
  return new Promise<T>((resolve, reject) => {
    const onAbort = () => reject(new Error('aborted'));
    signal.addEventListener('abort', onAbort, { once: true });
    work.then(resolve, reject).finally(() => signal.removeEventListener('abort', onAbort));
  });
}

async function attempt(p: Prepared, input: WebhookInput, deps: Required<WebhookDeps>): Promise<AttemptResult> {
  const controller = new AbortController();
  const timer = setTimeout(() => controller.abort(), deps.timeoutMs);
  try {
    // The guard runs on every attempt, and the request connects to the address it checked.
    const target = await untilAborted(resolveTarget(p.url.hostname, { lookup: deps.lookup, allowPrivate: input.allowPrivate }), controller.signal);
    const headers: Record<string, string> = {
      ...p.headers,
      'User-Agent': USER_AGENT,
      'X-Webhook-Id': input.webhookId,
      'X-Signature': signatureHeader(input.secret, p.body ?? '', deps.now() / 1000),
      ...(p.body === undefined ? {} : { 'Content-Type': 'application/json', 'Content-Length': String(Buffer.byteLength(p.body)) }),
    };
    const answer = await send(p, target, headers, controller.signal);
    return { kind: 'answer', ...answer };
  } catch (err) {
    if (err instanceof BlockedAddressError) return { kind: 'failed', error: err.message, retryable: false };
    if (controller.signal.aborted) return { kind: 'failed', error: `no complete answer within ${deps.timeoutMs / 1000} s`, retryable: true };
    return { kind: 'failed', error: err instanceof Error ? err.message : String(err), retryable: true };
  } finally {
    clearTimeout(timer);
  }
}

const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));

/**
 * Calls a WEBHOOK step's URL (DESIGN §9, docs/workflows.md "WEBHOOK step"): renders the
 * request, signs it, refuses private addresses unless allowed, and tries up to 3 times: 5xx,
 * timeouts and connection errors are retried; 2xx is success; 3xx (redirects are not followed),
 * 4xx and a refused address end it at once. Never throws for the receiver's or the config's
 * faults: the result says what happened.
 */
export async function callWebhook(deps: WebhookDeps, input: WebhookInput): Promise<WebhookResult> {
  const d: Required<WebhookDeps> = {
    lookup: deps.lookup ?? systemLookup,
    timeoutMs: deps.timeoutMs ?? DEFAULT_TIMEOUT_MS,
    retryDelaysMs: deps.retryDelaysMs ?? DEFAULT_RETRY_DELAYS_MS,
    now: deps.now ?? Date.now,
  };
  const started = performance.now();
  const elapsed = () => Math.round(performance.now() - started);
  let p: Prepared;
  try {
    p = prepare(input);
  } catch (err) {
    if (!(err instanceof ConfigProblem)) throw err;
    return { ok: false, status: null, bodyExcerpt: null, error: err.message, attempts: 0, method: null, url: null, durationMs: elapsed() };
  }
  const base = { method: p.method, url: safeUrl(p.url) };
  for (let n = 1; ; n++) {
    const r = await attempt(p, input, d);
    const delay = d.retryDelaysMs[n - 1];
    if (r.kind === 'answer') {
      const ok = r.status >= 200 && r.status < 300;
      if (ok || r.status < 500 || delay === undefined) {
        return { ok, status: r.status, bodyExcerpt: r.excerpt, error: statusError(r.status), attempts: n, ...base, durationMs: elapsed() };
      }
    } else if (!r.retryable || delay === undefined) {
      return { ok: false, status: null, bodyExcerpt: null, error: r.error, attempts: n, ...base, durationMs: elapsed() };
    }
    await sleep(delay);
  }
}
