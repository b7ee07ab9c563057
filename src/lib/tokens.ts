import { createHmac, timingSafeEqual } from 'node:crypto';
import { deriveKey } from './secret-box.js';

/**
 * Signed, URL-safe tokens for links in emails (open pixel, click redirect, unsubscribe,
 * subscribe, manage). `<payload>.<mac>`, base64url; the payload is JSON. A token of one
 * purpose never verifies as another.
 */
export function createTokens(secret: string) {
  const key = deriveKey(secret, 'link-tokens');
  const mac = (purpose: string, payload: string) =>
    createHmac('sha256', key).update(`${purpose}:${payload}`).digest().subarray(0, 16).toString('base64url');
  return {
    sign(purpose: string, data: Record<string, unknown>): string {
      const payload = Buffer.from(JSON.stringify(data)).toString('base64url');
      return `${payload}.${mac(purpose, payload)}`;
    },
    /** The data of a valid token of this purpose, or undefined (tampered, other purpose, garbage). */
    verify(purpose: string, token: string): Record<string, unknown> | undefined {
      const [payload, given] = token.split('.');
      if (!payload || !given || token.split('.').length !== 2) return undefined;
      const expected = Buffer.from(mac(purpose, payload));
      const actual = Buffer.from(given);
      if (expected.length !== actual.length || !timingSafeEqual(expected, actual)) return undefined;
      try {
        const data: unknown = JSON.parse(Buffer.from(payload, 'base64url').toString('utf8'));
        return typeof data === 'object' && data !== null && !Array.isArray(data) ? (data as Record<string, unknown>) : undefined;
      } catch {
        return undefined;
      }
    },
  };
}
export type Tokens = ReturnType<typeof createTokens>;
