import nodemailer from 'nodemailer';
import type { SendMailOptions } from 'nodemailer';
import type { SmtpAnswer } from './helpers.js';

/** Sends a composed message (nodemailer builds the MIME) over SMTP to the receiver on loopback. */
export async function smtpMail(port: number, envelope: { from: string; to: string[] }, message: SendMailOptions): Promise<SmtpAnswer> {
  const transport = nodemailer.createTransport({ host: '127.0.0.1', port, secure: false, ignoreTLS: true, connectionTimeout: 10_000, greetingTimeout: 10_000 });
  try {
    const info: { response: string } = await transport.sendMail({ ...message, envelope });
    return { ok: true, response: info.response };
  } catch (err) {
    const e = err as { responseCode?: number; response?: string; message: string };
    return { ok: false, code: e.responseCode, response: e.response ?? e.message };
  } finally {
    transport.close();
  }
}
