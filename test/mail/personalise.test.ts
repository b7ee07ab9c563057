import { describe, expect, it, vi } from 'vitest';
import { createTokens } from '../../src/lib/tokens.js';
import { subscriptionUrls } from '../../src/mail/compliance.js';
import { renderForRecipient } from '../../src/mail/personalise.js';

const tokens = createTokens('personalise-test-secret-0123456789abcdefghijklmnop');
const deps = { tokens, publicUrl: 'https://mail.example' };
const recipient = { emailId: 'e-1', projectId: 'p-1', contactId: 'c-1', email: 'ada@example.com' };

describe('renderForRecipient', () => {
  it('fills every subscription URL variable with the URL subscriptionUrls makes', () => {
    const urls = subscriptionUrls(recipient, deps);
    expect(Object.keys(urls).length).toBeGreaterThan(0);
    for (const [key, url] of Object.entries(urls)) {
      const out = renderForRecipient({ subject: `{{${key}}}`, html: `<a href="{{${key}}}">x</a>{{{${key}}}}` }, recipient, deps);
      expect(out.subject).toBe(url);
      expect(out.html).toBe(`<a href="${url.replaceAll('&', '&amp;')}">x</a>${url}`);
    }
  });

  it('signs no token for a body that names no subscription URL', () => {
    const sign = vi.spyOn(tokens, 'sign');
    const out = renderForRecipient({ subject: 'Hi {{name}}', html: '<p>{{email}} {{order ?? none}}</p>' }, { ...recipient, data: { name: 'Ada' } }, deps);
    expect(out).toEqual({ subject: 'Hi Ada', html: '<p>ada@example.com none</p>' });
    expect(sign).not.toHaveBeenCalled();
    renderForRecipient({ subject: 'x', html: '{{manageUrl}}' }, recipient, deps);
    expect(sign).toHaveBeenCalled();
    sign.mockRestore();
  });

  it('the reserved URLs win over data of the same name; without a contact the data stays', () => {
    const data = { unsubscribeUrl: 'https://evil.example', manageUrl: 'mine' };
    const withContact = renderForRecipient({ subject: '{{unsubscribeUrl}}', html: '{{manageUrl}}' }, { ...recipient, data }, deps);
    const urls = subscriptionUrls(recipient, deps);
    expect(withContact).toEqual({ subject: urls.unsubscribeUrl, html: urls.manageUrl });
    const noContact = renderForRecipient({ subject: '{{unsubscribeUrl}}', html: '{{manageUrl}}' }, { ...recipient, contactId: null, data }, deps);
    expect(noContact).toEqual({ subject: 'https://evil.example', html: 'mine' });
  });

  it('one-off values win over contact data, and the reserved email over both', () => {
    const out = renderForRecipient(
      { subject: '{{a}} {{email}}', html: '{{b.c}}' },
      { ...recipient, data: { a: 'data', email: 'x@y', b: { c: 'deep' } }, values: { a: 'value', email: 'z@y' } },
      deps,
    );
    expect(out).toEqual({ subject: 'value ada@example.com', html: 'deep' });
  });
});
