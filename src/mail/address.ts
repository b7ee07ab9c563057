/** Addresses and the Message-ID format: the one place both are spelled. */

/** The domain part of an address, lower-cased. */
export const domainOf = (email: string): string => email.slice(email.lastIndexOf('@') + 1).trim().toLowerCase();

/**
 * The text around an email's id in its Message-ID, `<id@sender-domain>`: for set-based SQL that
 * builds Message-IDs from ids it generates (`prefix || id || suffix`); {@link messageIdFor}
 * is the same format in code.
 */
export function messageIdParts(fromEmail: string): { prefix: string; suffix: string } {
  return { prefix: '<', suffix: `@${domainOf(fromEmail)}>` };
}

/** The Message-ID of an email, chosen when the email is accepted and kept on retries: `<emailId@from-domain>`. */
export function messageIdFor(emailId: string, fromEmail: string): string {
  const { prefix, suffix } = messageIdParts(fromEmail);
  return `${prefix}${emailId}${suffix}`;
}
