import { BlockList, isIPv4, isIPv6 } from 'node:net';

/**
 * Who fetched an open pixel (docs/analytics.md "Machine opens"). A small list, maintained here:
 * each entry says why it is a machine. Only the request's User-Agent and address are looked at;
 * the timing rule (a prefetch comes within seconds of sending or delivery) is applied where the
 * open is recorded (emails facade, `recordMilestone`), against the email's own times.
 */

/**
 * - `machine`: never a person reading the email, whenever it comes: security scanners and link
 *   checkers, HTTP libraries, and Apple Mail Privacy Protection, which loads remote content "in
 *   the background, even when you don't open the message" (Apple, support.apple.com/HT212617).
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
  // Apple MPP's proxy sends this bare token and nothing else; no browser or mail client does.
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

/** Apple owns 17.0.0.0/8 (ARIN, NET-17-0-0-0-1): its MPP proxies fetch from there. */
const APPLE = new BlockList();
APPLE.addSubnet('17.0.0.0', 8, 'ipv4');

function isApple(ip: string | undefined): boolean {
  if (!ip) return false;
  const v4 = ip.startsWith('::ffff:') && isIPv4(ip.slice(7)) ? ip.slice(7) : ip;
  if (isIPv4(v4)) return APPLE.check(v4, 'ipv4');
  return isIPv6(v4) && APPLE.check(v4, 'ipv6');
}

/** What the open pixel's request tells about its client. */
export interface OpenClient {
  userAgent?: string | undefined;
  ip?: string | undefined;
}

/**
 * Classifies an open request by its User-Agent and client address. The address only helps when
 * the server sees the client's own address (no reverse proxy in front, or one it trusts).
 */
export function classifyOpener(request: OpenClient): Opener {
  const ua = request.userAgent ?? '';
  for (const rule of AGENT_RULES) if (ua !== '' && rule.test(ua)) return { kind: rule.kind, agent: rule.agent };
  if (isApple(request.ip)) return { kind: 'machine', agent: 'apple-mpp' };
  return { kind: 'unknown' };
}

/** The signal `recordMilestone` (emails facade) records an open with. */
export function openSignal(client: OpenClient): { kind: OpenerKind; prefetchWindowSeconds: number } {
  return { kind: classifyOpener(client).kind, prefetchWindowSeconds: PREFETCH_WINDOW_SECONDS };
}
