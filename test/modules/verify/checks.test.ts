import MailChecker from 'mailchecker';
import { describe, expect, it } from 'vitest';
import {
  editDistance,
  isAlias,
  isDisposableDomain,
  isListedPersonalDomain,
  isPlusAddressed,
  parseAddress,
  suggestCorrection,
} from '../../../src/modules/verify/checks.js';

const parsed = (email: string) => {
  const addr = parseAddress(email);
  if (!addr) throw new Error(`expected ${email} to parse`);
  return addr;
};

describe('parseAddress (pragmatic RFC 5321/5322 syntax)', () => {
  it.each([
    'user@example.com',
    'first.last@sub.example.co.uk',
    "o'brien+tag@example.com",
    "!#$%&'*+/=?^_`{|}~-@example.com",
    'user@xn--bcher-kva.example',
    `${'a'.repeat(64)}@example.com`,
    `user@${'a'.repeat(63)}.com`,
    'josé@example.com',
  ])('accepts %s', (email) => {
    expect(parseAddress(email)).toBeDefined();
  });

  it.each([
    ['no at sign', 'user.example.com'],
    ['two at signs', 'a@b@example.com'],
    ['empty local part', '@example.com'],
    ['empty domain', 'user@'],
    ['leading dot', '.user@example.com'],
    ['trailing dot in local part', 'user.@example.com'],
    ['consecutive dots', 'us..er@example.com'],
    ['local part over 64 octets', `${'a'.repeat(65)}@example.com`],
    ['multi-byte local part over 64 octets', `${'é'.repeat(33)}@example.com`],
    ['space', 'us er@example.com'],
    ['quoted local part', '"john doe"@example.com'],
    ['dotless domain', 'user@localhost'],
    ['consecutive dots in domain', 'user@example..com'],
    ['trailing dot in domain', 'user@example.com.'],
    ['label starting with a hyphen', 'user@-example.com'],
    ['label ending with a hyphen', 'user@example-.com'],
    ['underscore in domain', 'user@exa_mple.com'],
    ['label over 63 characters', `user@${'a'.repeat(64)}.com`],
    ['domain over 253 octets', `user@${Array.from({ length: 5 }, () => 'a'.repeat(60)).join('.')}.com`],
    ['address over 254 octets', `${'a'.repeat(64)}@${Array.from({ length: 5 }, () => 'b'.repeat(45)).join('.')}.com`],
    ['IP address domain', 'user@192.0.2.1'],
    ['domain literal', 'user@[192.0.2.1]'],
  ])('rejects %s', (_why, email) => {
    expect(parseAddress(email)).toBeUndefined();
  });

  it('lower-cases the domain and converts IDNs to xn--, keeping the local part as typed', () => {
    expect(parseAddress('John.Doe@Example.COM')).toEqual({ local: 'John.Doe', domain: 'example.com' });
    expect(parseAddress('user@Bücher.example')).toEqual({ local: 'user', domain: 'xn--bcher-kva.example' });
  });
});

describe('alias forms', () => {
  it('reads local+tag as plus-addressed, but not a leading +', () => {
    expect(isPlusAddressed(parsed('jane+news@example.com'))).toBe(true);
    expect(isPlusAddressed(parsed('jane+@example.com'))).toBe(true);
    expect(isPlusAddressed(parsed('+jane@example.com'))).toBe(false);
    expect(isPlusAddressed(parsed('jane@example.com'))).toBe(false);
  });

  it('counts plus-addressing, dotted Gmail local parts and googlemail.com as aliases', () => {
    expect(isAlias(parsed('jane+news@example.com'))).toBe(true);
    expect(isAlias(parsed('jane.doe@gmail.com'))).toBe(true);
    expect(isAlias(parsed('janedoe@googlemail.com'))).toBe(true);
    expect(isAlias(parsed('janedoe@gmail.com'))).toBe(false);
    expect(isAlias(parsed('jane.doe@example.com'))).toBe(false);
    expect(isAlias(parsed('info@example.com'))).toBe(false);
  });
});

describe('maintained lists', () => {
  it('finds disposable domains and their subdomains on the mailchecker list', () => {
    expect(MailChecker.blacklist().has('mailinator.com')).toBe(true);
    expect(isDisposableDomain('mailinator.com')).toBe(true);
    expect(isDisposableDomain('inbox.mailinator.com')).toBe(true);
    expect(isDisposableDomain('gmail.com')).toBe(false);
    expect(isDisposableDomain('good.test')).toBe(false);
  });

  it('lists free-mail providers exactly, not their look-alikes', () => {
    expect(isListedPersonalDomain('gmail.com')).toBe(true);
    expect(isListedPersonalDomain('googlemail.com')).toBe(true);
    expect(isListedPersonalDomain('yahoo.com')).toBe(true);
    expect(isListedPersonalDomain('good.test')).toBe(false);
    expect(isListedPersonalDomain('mail.gmail.com')).toBe(false);
  });
});

describe('typo suggestions', () => {
  const suggest = (email: string, domainMissing = false) => suggestCorrection(parsed(email), { domainMissing });

  it('suggests the well-known provider for a misspelt one, keeping the local part as typed', () => {
    expect(suggest('user@gmial.com')).toBe('user@gmail.com');
    expect(suggest('Jane.Doe@hotmial.com')).toBe('Jane.Doe@hotmail.com');
    expect(suggest('user@gmail.co')).toBe('user@gmail.com');
    expect(suggest('user@yaho.com')).toBe('user@yahoo.com');
  });

  it('does not flag correct or well-known domains', () => {
    for (const email of ['user@gmail.com', 'user@mac.com', 'user@gmx.net', 'user@yahoo.com.br', 'user@foxmail.com', 'user@good.test']) {
      expect(suggest(email), email).toBeUndefined();
    }
  });

  it('does not turn short company domains into providers two edits away', () => {
    // The spell checker alone says ibm.com → aim.com, hp.com → qq.com, acme.com → me.com.
    for (const email of ['user@ibm.com', 'user@hp.com', 'user@acme.com', 'user@meta.com', 'user@aws.com']) {
      expect(suggest(email), email).toBeUndefined();
    }
  });

  it('offers a spelling guess for an unknown domain only when DNS says it does not exist', () => {
    expect(suggest('user@outlook.con', false)).toBeUndefined();
    expect(suggest('user@outlook.con', true)).toBe('user@outlook.co');
  });

  it('measures edit distance with adjacent swaps as one edit', () => {
    expect(editDistance('gmial.com', 'gmail.com')).toBe(1);
    expect(editDistance('ibm.com', 'aim.com')).toBe(2);
    expect(editDistance('', 'abc')).toBe(3);
    expect(editDistance('same', 'same')).toBe(0);
  });
});
