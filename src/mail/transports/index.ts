import { createSmtpTransport, type SmtpTransport } from './smtp.js';

/**
 * Where finished messages go: the SMTP relay of SMTP_URL, or (no SMTP_URL) the capture outbox
 * in the database. Capture needs no object of its own: it is a write in the delivery's
 * transaction (the emails module's outbox.repo.ts), which is what makes it exactly-once.
 */
export type MailTransport =
  | { readonly kind: 'smtp'; readonly smtp: SmtpTransport; readonly projectRatePerSecond: number | undefined; close(): Promise<void> }
  | { readonly kind: 'capture'; readonly projectRatePerSecond: undefined; close(): Promise<void> };

/**
 * `projectRate` (emails per second per project, per worker process) is read from SMTP_URL's
 * query, beside the client's own settings (`maxConnections`, `rateLimit`…: smtp-url.ts).
 */
function projectRate(smtpUrl: string): number | undefined {
  const value = new URL(smtpUrl).searchParams.get('projectRate');
  if (value === null) return undefined;
  const n = Number(value);
  if (!Number.isFinite(n) || n <= 0) throw new Error(`SMTP_URL: projectRate must be a positive number, got "${value}"`);
  return n;
}

/** The transport for SMTP_URL (undefined: capture). Nothing connects until the first message. */
export function createMailTransport(smtpUrl: string | undefined): MailTransport {
  if (!smtpUrl) return { kind: 'capture', projectRatePerSecond: undefined, close: async () => undefined };
  const smtp = createSmtpTransport(smtpUrl);
  return { kind: 'smtp', smtp, projectRatePerSecond: projectRate(smtpUrl), close: () => smtp.close() };
}
