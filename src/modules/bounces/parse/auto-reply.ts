/**
 * Auto-replies (out of office, vacation, autoresponders): RFC 3834's Auto-Submitted, the de-facto
 * headers of common responders, and the usual subjects. Read only after the message was found to
 * be no report and no bounce (DSNs carry Auto-Submitted too). They are not bounces: ignored.
 */

const SUBJECT = /^(re:\s*)?(out of (the )?office|automatic reply|auto(matic)?[- ]?(reply|response)|autoreply|on vacation|away from (the office|my desk)|abwesenheit|réponse automatique|respuesta automática|risposta automatica|absent)/i;

export function autoReplyReason(headers: Map<string, string>, subject: string): string | undefined {
  const submitted = headers.get('auto-submitted')?.trim().toLowerCase();
  if (submitted && submitted !== 'no') return `Auto-Submitted: ${submitted.slice(0, 50)}`;
  for (const name of ['x-autoreply', 'x-autorespond', 'x-autoresponder']) if (headers.has(name)) return `${name} header`;
  const precedence = headers.get('precedence')?.trim().toLowerCase();
  if (precedence === 'auto_reply') return 'Precedence: auto_reply';
  if (SUBJECT.test(subject.trim())) return `subject "${subject.trim().slice(0, 100)}"`;
  return undefined;
}
