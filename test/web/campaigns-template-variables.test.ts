import { describe, expect, it } from 'vitest';
import { renderTemplate as serverRender, templateVariables as serverVariables } from '../../src/mail/render.js';
import { findTags, openTagAt, previewVariables, renderTemplate, templateVariables, unknownVariables } from '../../web/src/pages/templates/variables.js';

const body = (t: string, vars: Record<string, unknown>) => renderTemplate(t, vars, { escape: true });

describe('template editor: the variable language of docs/templates.md, client-side', () => {
  it('escapes {{key}} in bodies, not {{{key}}}, and nothing in subjects', () => {
    const vars = { name: '<b>Ann & "Bo"</b>' };
    expect(body('Hi {{name}}', vars)).toBe('Hi &lt;b&gt;Ann &amp; &quot;Bo&quot;&lt;/b&gt;');
    expect(body('Hi {{{name}}}', vars)).toBe('Hi <b>Ann & "Bo"</b>');
    expect(renderTemplate('Hi {{name}}', vars, { escape: false })).toBe('Hi <b>Ann & "Bo"</b>');
  });

  it('uses the fallback for missing, null and empty values only; quoted fallbacks keep inner spaces', () => {
    expect(body('{{a ?? "x y "}}', {})).toBe('x y ');
    expect(body("{{a ?? 'q'}}", { a: null })).toBe('q');
    expect(body('{{a ??   friend  }}', { a: '' })).toBe('friend');
    expect(body('{{a ?? x}}', { a: 0 })).toBe('0');
    expect(body('{{a ?? x}}', { a: false })).toBe('false');
    expect(body('{{a ?? <x>}}', {})).toBe('&lt;x&gt;');
    expect(body('[{{missing}}]', {})).toBe('[]');
  });

  it('ignores whitespace, reads flat dotted keys and own keys only, leaves non-tags and inserted values alone', () => {
    expect(body('{{   first name   }}', { 'first name': 'Ann' })).toBe('Ann');
    expect(body('{{user.name}}', { 'user.name': 'flat' })).toBe('flat');
    expect(body('{{constructor}}|{{toString}}', {})).toBe('|');
    expect(body('{{ }} {{}} {{a?b}}', { a: 1 })).toBe('{{ }} {{}} {{a?b}}');
    expect(body('{{x}}', { x: '{{y}}', y: 'no' })).toBe('{{y}}');
  });

  it('renders like the server on a mixed template', () => {
    const t = 'Hi {{ firstName ?? "there" }}, {{{html}}} {{plan}} {{ }} {{a?b}} {{email}} {{n ?? 5}} {{empty ?? \'dflt\'}}';
    const vars = { firstName: 'Zoë <3', html: '<i>x</i>', plan: 'pro & co', email: 'z@x.io', n: 0, empty: '' };
    for (const escape of [true, false]) expect(renderTemplate(t, vars, { escape })).toBe(serverRender(t, vars, { escape }));
    expect(templateVariables(t)).toEqual(serverVariables(t));
  });

  it('is linear on hostile input', () => {
    const t = `{{${' '.repeat(200_000)}`.repeat(2);
    const start = performance.now();
    expect(body(t, {})).toBe(t);
    expect(performance.now() - start).toBeLessThan(1000);
  });

  it('finds tags with their positions and lists unknown variables once, reserved ones excluded', () => {
    const t = '<p>{{firstName}} {{plann ?? "free"}} {{{plann}}} {{unsubscribeUrl}} {{email}}</p>';
    const tags = findTags(t);
    expect(tags.map((x) => [x.key, t.slice(x.from, x.to), x.raw])).toEqual([
      ['firstName', '{{firstName}}', false],
      ['plann', '{{plann ?? "free"}}', false],
      ['plann', '{{{plann}}}', true],
      ['unsubscribeUrl', '{{unsubscribeUrl}}', false],
      ['email', '{{email}}', false],
    ]);
    expect(unknownVariables([t, 'Subject {{city}}'], ['firstName', 'plan'])).toEqual(['plann', 'city']);
    expect(unknownVariables([t], ['firstName', 'plann'])).toEqual([]);
  });

  it('renders a preview as a contact: its data, its email, link placeholders no data overrides', () => {
    const vars = previewVariables({ email: 'ann@x.io', data: { firstName: 'Ann', email: 'spoof', unsubscribeUrl: 'evil' } });
    expect(body('{{firstName}} {{email}} {{unsubscribeUrl}}', vars)).toBe('Ann ann@x.io #unsubscribe');
    expect(body('{{firstName ?? "there"}}', previewVariables(undefined))).toBe('there');
  });

  it('knows when the cursor is inside an open {{ for autocomplete', () => {
    expect(openTagAt('Hi {{fir', 8)).toEqual({ from: 5, typed: 'fir' });
    expect(openTagAt('Hi {{ fir', 9)).toEqual({ from: 6, typed: 'fir' });
    expect(openTagAt('Hi {{{fir', 9)).toEqual({ from: 6, typed: 'fir' });
    expect(openTagAt('Hi {{', 5)).toEqual({ from: 5, typed: '' });
    expect(openTagAt('Hi {{name}} x', 13)).toBeUndefined();
    expect(openTagAt('{{a ?? de', 9)).toBeUndefined();
    expect(openTagAt('plain', 5)).toBeUndefined();
  });
});
