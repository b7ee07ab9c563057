import { createHmac, timingSafeEqual } from 'node:crypto';
import { deriveKey } from '../../lib/secret-box.js';

/**
 * VERP return paths (docs/bounces.md): `b-<email id>-<signature>@<BOUNCE_DOMAIN>`.
 *
 * The email id is its UUID's 16 bytes in lower-case base32 (26 characters); the signature is
 * HMAC-SHA256 over the bounce domain and the id with a key derived from SECRET, truncated to
 * 80 bits (16 base32 characters). The local part is 45 characters (the limit is 64) and
 * case-insensitive: some MTAs lower- or upper-case the return path. Only this server can mint
 * an address, an address names exactly one email, and an address minted for one bounce domain
 * does not verify at another.
 */

const ALPHABET = 'abcdefghijklmnopqrstuvwxyz234567';
const SIGNATURE_BYTES = 10;
const LOCAL_PART = /^b-([a-z2-7]{26})-([a-z2-7]{16})$/;
const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;

function base32(bytes: Buffer): string {
  let out = '';
  let bits = 0;
  let value = 0;
  for (const byte of bytes) {
    value = (value << 8) | byte;
    bits += 8;
    while (bits >= 5) {
      out += ALPHABET[(value >>> (bits - 5)) & 31];
      bits -= 5;
    }
  }
  if (bits > 0) out += ALPHABET[(value << (5 - bits)) & 31];
  return out;
}

function fromBase32(text: string, length: number): Buffer | undefined {
  const out = Buffer.alloc(length);
  let bits = 0;
  let value = 0;
  let i = 0;
  for (const ch of text) {
    const v = ALPHABET.indexOf(ch);
    if (v < 0) return undefined;
    value = ((value << 5) | v) & 0xffff;
    bits += 5;
    if (bits >= 8) {
      if (i >= length) return undefined;
      out[i++] = (value >>> (bits - 8)) & 0xff;
      bits -= 8;
    }
  }
  return i === length ? out : undefined;
}

const uuidBytes = (id: string) => Buffer.from(id.replace(/-/g, ''), 'hex');
const uuidOf = (bytes: Buffer) => {
  const h = bytes.toString('hex');
  return `${h.slice(0, 8)}-${h.slice(8, 12)}-${h.slice(12, 16)}-${h.slice(16, 20)}-${h.slice(20)}`;
};

export interface Verp {
  /** The bounce domain, lower-cased. */
  readonly domain: string;
  /** The return path of an email. */
  address(emailId: string): string;
  /** The email id an address names, or undefined: another domain, not a VERP address, or a signature that does not verify. */
  emailIdOf(address: string): string | undefined;
}

/** VERP addresses at `domain`, signed with a key derived from `secret`. */
export function createVerp(secret: string, domain: string): Verp {
  const key = deriveKey(secret, 'verp-return-path');
  const bounceDomain = domain.toLowerCase();
  const sign = (id: Buffer) => createHmac('sha256', key).update(bounceDomain).update('\n').update(id).digest().subarray(0, SIGNATURE_BYTES);
  return {
    domain: bounceDomain,
    address(emailId) {
      if (!UUID.test(emailId)) throw new Error(`not an email id: ${emailId}`);
      const id = uuidBytes(emailId);
      return `b-${base32(id)}-${base32(sign(id))}@${bounceDomain}`;
    },
    emailIdOf(address) {
      const at = address.lastIndexOf('@');
      if (at < 0 || address.slice(at + 1).toLowerCase() !== bounceDomain) return undefined;
      const m = LOCAL_PART.exec(address.slice(0, at).toLowerCase());
      if (!m) return undefined;
      const id = fromBase32(m[1] ?? '', 16);
      const given = fromBase32(m[2] ?? '', SIGNATURE_BYTES);
      if (!id || !given) return undefined;
      // Canonical encodings only: the unused trailing bits must be zero.
      if (base32(id) !== m[1] || base32(given) !== m[2]) return undefined;
      return timingSafeEqual(sign(id), given) ? uuidOf(id) : undefined;
    },
  };
}
