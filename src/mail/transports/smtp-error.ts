/**
 * A failed SMTP attempt: `permanent` for a 5xx (or an envelope/message the relay can never take).
 * `endOfDataSent`: the failure came after `beforeEndOfData` resolved and the final dot was
 * released, so without a reply (`responseCode` undefined) the relay may have accepted it.
 */
export class SmtpError extends Error {
  endOfDataSent = false;
  constructor(
    message: string,
    readonly permanent: boolean,
    readonly responseCode: number | undefined,
    options?: { cause?: unknown },
  ) {
    super(message, options);
    this.name = 'SmtpError';
  }
}

function field(err: unknown, name: string): unknown {
  return typeof err === 'object' && err !== null && name in err ? (err as Record<string, unknown>)[name] : undefined;
}

/**
 * 5xx replies are permanent; 4xx replies, connection failures and timeouts are transient.
 * An envelope or message refused before any reply (EENVELOPE, EMESSAGE: e.g. larger than
 * the relay's SIZE) would be refused again: permanent. The client throws SmtpErrors already
 * classified; this also takes any other error (e.g. one with nodemailer's `code`/`responseCode`).
 */
export function classifySmtpError(err: unknown): SmtpError {
  if (err instanceof SmtpError) return err;
  const responseCode = typeof field(err, 'responseCode') === 'number' ? Number(field(err, 'responseCode')) : undefined;
  const code = typeof field(err, 'code') === 'string' ? String(field(err, 'code')) : undefined;
  const response = typeof field(err, 'response') === 'string' ? String(field(err, 'response')) : undefined;
  const message = response ?? (err instanceof Error ? err.message : String(err));
  const permanent =
    responseCode !== undefined ? responseCode >= 500 : code === 'EENVELOPE' || code === 'EMESSAGE';
  return new SmtpError(code && !response ? `${code}: ${message}` : message, permanent, responseCode, { cause: err });
}
