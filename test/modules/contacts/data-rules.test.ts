import { describe, expect, it } from 'vitest';
import { applyPatch, ContactDataInput, normalizeEmail, RequestDataInput, resolveData } from '../../../src/modules/contacts/data-rules.js';
import { isReservedEventName } from '../../../src/modules/events/event-names.js';

describe('data rules', () => {
  it('stores primitives, deletes on null, ignores empty strings, drops reserved keys', () => {
    const r = resolveData({
      plan: 'pro',
      seats: 3,
      trial: false,
      gone: null,
      blank: '',
      id: 'x',
      service_id: 'x',
      service_email: 'x',
      email: 'x',
      unsubscribeUrl: 'x',
      subscribeUrl: 'x',
      manageUrl: 'x',
    });
    expect(r.patch).toEqual({ plan: 'pro', seats: 3, trial: false, gone: null });
    expect(r.values).toEqual({ plan: 'pro', seats: 3, trial: false });
  });

  it('uses {value, persistent: false} for the request only, and stores {value, persistent: true}', () => {
    const r = resolveData({ code: { value: '1234', persistent: false }, city: { value: 'Oslo', persistent: true }, skip: { value: '', persistent: false } });
    expect(r.patch).toEqual({ city: 'Oslo' });
    expect(r.values).toEqual({ code: '1234', city: 'Oslo' });
  });

  it('merges a patch as the database does', () => {
    expect(applyPatch({ a: 1, b: 'x' }, { b: null, c: true })).toEqual({ a: 1, c: true });
  });

  it('accepts one-off values only on send/track schemas', () => {
    expect(RequestDataInput.safeParse({ k: { value: 1, persistent: false } }).success).toBe(true);
    expect(ContactDataInput.safeParse({ k: { value: 1, persistent: false } }).success).toBe(false);
    for (const bad of [{ k: [1] }, { k: { nested: true } }, { '': 1 }]) {
      expect(RequestDataInput.safeParse(bad).success).toBe(false);
      expect(ContactDataInput.safeParse(bad).success).toBe(false);
    }
  });

  it('normalises emails for case-insensitive uniqueness', () => {
    expect(normalizeEmail('  Ada@Example.COM ')).toBe('ada@example.com');
  });
});

describe('reserved event names', () => {
  it.each(['email.open', 'email.sent', 'EMAIL.click', 'contact.subscribed', 'contact.unsubscribed', 'segment.vip-users.entry', 'segment.x.exit'])(
    'rejects %s',
    (name) => expect(isReservedEventName(name)).toBe(true),
  );
  it.each(['signup', 'emailed', 'contact.updated', 'segment.vip', 'segment..entry', 'order.email.sent'])('allows %s', (name) =>
    expect(isReservedEventName(name)).toBe(false),
  );
});
