import { createHmac } from 'node:crypto';

/**
 * `X-Signature` of one outgoing webhook request (workflow WEBHOOK steps, webhook endpoints):
 * `t=<unix seconds>,v1=<hex HMAC-SHA256>` over `"<t>.<body>"`, keyed with the whole secret
 * (`whsec_…`, prefix included). `body` is the exact text sent, '' when the request has none.
 * Receivers: docs/workflows.md "WEBHOOK step", docs/webhooks-outgoing.md.
 */
export function signatureHeader(secret: string, body: string, unixSeconds: number): string {
  const t = Math.floor(unixSeconds);
  const v1 = createHmac('sha256', secret).update(`${t}.${body}`, 'utf8').digest('hex');
  return `t=${t},v1=${v1}`;
}
