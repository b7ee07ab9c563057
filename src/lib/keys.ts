import { randomBytes } from 'node:crypto';

const BASE62 = '0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz';

/** Uniform random base62 string (rejection sampling keeps it unbiased). */
export function randomBase62(length: number): string {
  let out = '';
  while (out.length < length) {
    for (const byte of randomBytes(length * 2)) {
      if (byte < 248 && out.length < length) out += BASE62[byte % 62];
    }
  }
  return out;
}

export const PUBLIC_KEY_PREFIX = 'pk_';
export const SECRET_KEY_PREFIX = 'sk_';

/** A fresh pk_/sk_ pair; each key carries 40 random base62 characters (~238 bits). */
export function generateKeyPair(): { publicKey: string; secretKey: string } {
  return { publicKey: PUBLIC_KEY_PREFIX + randomBase62(40), secretKey: SECRET_KEY_PREFIX + randomBase62(40) };
}
