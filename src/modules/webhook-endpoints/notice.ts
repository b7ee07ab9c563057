import { safeUrl } from '../../lib/outgoing-http.js';

/** The email to each OWNER and ADMIN when an endpoint is disabled after a day of failures (plain text). */
export function endpointDisabledNotice(input: { projectId: string; projectName: string; endpointId: string; url: string; reason: string }): {
  subject: string;
  text: string;
} {
  const name = input.projectName.replace(/[\r\n]+/g, ' ').trim();
  const url = safeUrl(input.url).replace(/[\r\n]+/g, ' ');
  const text = [
    `A webhook endpoint of your project "${name}" (${input.projectId}) has been disabled.`,
    `Endpoint: ${url} (${input.endpointId})`,
    `Reason: ${input.reason}`,
    'While it is disabled, no event is captured or delivered for it; the deliveries that were waiting for a retry have been given up.',
    `The attempts and the answers of your endpoint are in its delivery log (GET /webhook-endpoints/${input.endpointId}/deliveries). Once the endpoint answers 2xx again (POST /webhook-endpoints/${input.endpointId}/test sends a signed ping), re-enable it with PATCH /webhook-endpoints/${input.endpointId} {"enabled": true}.`,
  ].join('\n\n');
  return { subject: `Webhook endpoint disabled in "${name.slice(0, 100)}"`, text };
}
