import { describe, expect, it } from 'vitest';
import { createSecretBox } from '../../src/lib/secret-box.js';
import { createTokens } from '../../src/lib/tokens.js';

const SECRET = 'a'.repeat(40);

describe('secret box', () => {
  it('round-trips, never repeats a ciphertext, and refuses tampering or another purpose', () => {
    const box = createSecretBox(SECRET, 'dkim');
    const a = box.seal('-----BEGIN PRIVATE KEY-----x');
    expect(a).not.toContain('PRIVATE');
    expect(box.seal('-----BEGIN PRIVATE KEY-----x')).not.toBe(a);
    expect(box.open(a)).toBe('-----BEGIN PRIVATE KEY-----x');
    const parts = a.split('.');
    parts[3] = `${parts[3]?.slice(0, -2)}AA`;
    expect(() => box.open(parts.join('.'))).toThrow();
    expect(() => createSecretBox(SECRET, 'other').open(a)).toThrow();
    expect(() => createSecretBox('b'.repeat(40), 'dkim').open(a)).toThrow();
  });
});

describe('link tokens', () => {
  it('verify only untampered tokens of their own purpose', () => {
    const tokens = createTokens(SECRET);
    const t = tokens.sign('click', { e: 'email-id', u: 'https://example.com/a' });
    expect(tokens.verify('click', t)).toEqual({ e: 'email-id', u: 'https://example.com/a' });
    expect(tokens.verify('open', t)).toBeUndefined();
    const [payload, mac] = t.split('.');
    const forged = Buffer.from(JSON.stringify({ e: 'email-id', u: 'https://evil.example' })).toString('base64url');
    expect(tokens.verify('click', `${forged}.${mac}`)).toBeUndefined();
    expect(tokens.verify('click', `${payload}.x${mac}`)).toBeUndefined();
    expect(tokens.verify('click', 'garbage')).toBeUndefined();
    expect(createTokens('c'.repeat(40)).verify('click', t)).toBeUndefined();
  });
});
