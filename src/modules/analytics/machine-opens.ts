/**
 * Who fetched an open pixel (docs/analytics.md "Machine opens"). A small list, maintained here:
 * each entry says why it is a machine. Only the request's User-Agent is looked at (no address
 * ranges: see the docs); the timing rule (a prefetch comes within seconds of sending or delivery)
 * is applied where the open is recorded (emails facade, `recordMilestone`), against the email's
 * own times.
 */

/**
 * - `machine`: never a person reading the email, whenever it comes: security scanners and link
 *   checkers, HTTP libraries, and Apple Mail Privacy Protection, which "downloads remote content
 *   in the background by default – regardless of how you do or don't engage with the email"
 *   (Apple's description of the feature, June 2021).
 * - `proxy`: an image proxy that fetches for a reader (Gmail, Yahoo/AOL) but may also prefetch on
 *   arrival: a machine only within {@link PREFETCH_WINDOW_SECONDS} of sending or delivery.
 * - `unknown`: anything else counts as a person.
 */
export type OpenerKind = 'machine' | 'proxy' | 'unknown';

export interface Opener {
  kind: OpenerKind;
  /** Which entry matched (for logs and the email.open event); absent for `unknown`. */
  agent?: string;
}

/** A proxy open this soon after the email was sent or delivered is a prefetch, not a reader. */
export const PREFETCH_WINDOW_SECONDS = 60;

interface AgentRule {
  agent: string;
  kind: Exclude<OpenerKind, 'unknown'>;
  test: (ua: string) => boolean;
}

const has = (needle: string) => (ua: string) => ua.toLowerCase().includes(needle.toLowerCase());

const AGENT_RULES: readonly AgentRule[] = [
  // Apple MPP's image loads carry this bare token and nothing else (as ESPs analysing MPP traffic
  // report); no browser or mail client sends it alone.
  { agent: 'apple-mpp', kind: 'machine', test: (ua) => ua.trim() === 'Mozilla/5.0' },
  // "Mozilla/5.0 (Windows NT 5.1; rv:11.0) Gecko Firefox/11.0 (via ggpht.com GoogleImageProxy)"
  { agent: 'google-image-proxy', kind: 'proxy', test: has('GoogleImageProxy') },
  // "YahooMailProxy; https://help.yahoo.com/kb/yahoo-mail-proxy-SLN28749.html" (AOL mail runs on it too)
  { agent: 'yahoo-mail-proxy', kind: 'proxy', test: has('YahooMailProxy') },
  // Mail security gateways that fetch every image and link of incoming mail.
  { agent: 'barracuda', kind: 'machine', test: has('Barracuda') },
  { agent: 'mimecast', kind: 'machine', test: has('Mimecast') },
  { agent: 'proofpoint', kind: 'machine', test: has('Proofpoint') },
  { agent: 'symantec-messagelabs', kind: 'machine', test: (ua) => has('MessageLabs')(ua) || has('Symantec')(ua) },
  { agent: 'trend-micro', kind: 'machine', test: (ua) => /trend ?micro/i.test(ua) },
  { agent: 'bing-preview', kind: 'machine', test: has('BingPreview') },
  // Automation, not a mail client: headless browsers, crawlers, HTTP libraries.
  { agent: 'headless-browser', kind: 'machine', test: has('HeadlessChrome') },
  // "Googlebot/2.1", "AhrefsBot/7.0", "… bot …"; not a phone model such as "CUBOT X19".
  { agent: 'bot', kind: 'machine', test: (ua) => /\bbot\b|[a-z]bot\/|crawler|spider/i.test(ua) },
  {
    agent: 'http-library',
    kind: 'machine',
    test: (ua) => /^(curl|wget|python-requests|python-urllib|go-http-client|java|okhttp|apache-httpclient|libwww-perl|node-fetch|axios|undici)\b/i.test(ua),
  },
];

/** What the open pixel's request tells about its client. */
export interface OpenClient {
  userAgent?: string | undefined;
}

/** Classifies an open request by its User-Agent. */
export function classifyOpener(request: OpenClient): Opener {
  const ua = request.userAgent ?? '';
  for (const rule of AGENT_RULES) if (ua !== '' && rule.test(ua)) return { kind: rule.kind, agent: rule.agent };
  return { kind: 'unknown' };
}

/** The signal `recordMilestone` (emails facade) records an open with. */
export function openSignal(client: OpenClient): { kind: OpenerKind; prefetchWindowSeconds: number } {
  return { kind: classifyOpener(client).kind, prefetchWindowSeconds: PREFETCH_WINDOW_SECONDS };
}
