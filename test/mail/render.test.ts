import { describe, expect, it } from 'vitest';
import { MAX_HTML_DEPTH } from '../../src/mail/html-depth.js';
import { escapeHtml, htmlToText, renderTemplate, stripTags, templateVariables, type Variables } from '../../src/mail/render.js';

const html = (template: string, vars: Variables = {}) => renderTemplate(template, vars, { escape: true });
const plain = (template: string, vars: Variables = {}) => renderTemplate(template, vars, { escape: false });

describe('renderTemplate', () => {
  it('HTML-escapes {{key}} values in bodies', () => {
    expect(html('<p>Hi {{name}}</p>', { name: '<script>alert("x")</script> & \'co\'' })).toBe(
      '<p>Hi &lt;script&gt;alert(&quot;x&quot;)&lt;/script&gt; &amp; &#39;co&#39;</p>',
    );
  });

  it('inserts {{key}} values raw when escaping is off (subjects)', () => {
    expect(plain('Hello {{name}} & welcome', { name: 'Tom & <Jerry>' })).toBe('Hello Tom & <Jerry> & welcome');
  });

  it('inserts {{{key}}} raw even in bodies', () => {
    expect(html('<div>{{{block}}}</div>', { block: '<b>bold</b>' })).toBe('<div><b>bold</b></div>');
    expect(html('{{{ block }}}', { block: '<i>x</i>' })).toBe('<i>x</i>');
  });

  it('uses quoted and unquoted fallbacks for missing keys', () => {
    expect(html('Hi {{name ?? "friend"}}!')).toBe('Hi friend!');
    expect(html("Hi {{name ?? 'there you'}}!")).toBe('Hi there you!');
    expect(html('Hi {{name ?? friend}}!')).toBe('Hi friend!');
    expect(html('Hi {{name??friend}}!')).toBe('Hi friend!');
    expect(html('Hi {{ name ?? "  spaced  " }}!')).toBe('Hi   spaced  !');
    expect(html('{{{name ?? "<b>raw</b>"}}}')).toBe('<b>raw</b>');
  });

  it('escapes a fallback in bodies like any value', () => {
    expect(html('{{name ?? "Tom & Jerry"}}')).toBe('Tom &amp; Jerry');
    expect(plain('{{name ?? "Tom & Jerry"}}')).toBe('Tom & Jerry');
  });

  it('keeps a fallback with a question mark or a lone quote as written', () => {
    expect(html('{{q ?? what?}}')).toBe('what?');
    expect(plain('{{q ?? "unbalanced}}')).toBe('"unbalanced');
    expect(plain('{{q ?? ""}}')).toBe('');
  });

  it('renders a missing key without fallback as empty', () => {
    expect(html('[{{missing}}]')).toBe('[]');
    expect(html('[{{{missing}}}]')).toBe('[]');
  });

  it('uses the fallback for null and empty-string values, not for 0 or false', () => {
    expect(html('{{a ?? x}}|{{b ?? y}}|{{c ?? z}}|{{d ?? w}}', { a: null, b: '', c: 0, d: false })).toBe('x|y|0|false');
    expect(html('[{{a}}][{{b}}]', { a: null, b: '' })).toBe('[][]');
  });

  it('renders numbers and booleans', () => {
    expect(plain('{{n}} {{f}} {{t}} {{neg}}', { n: 42, f: 1.5, t: true, neg: -3 })).toBe('42 1.5 true -3');
  });

  it('ignores whitespace inside the braces', () => {
    expect(html('{{  name  }}|{{\tname\n}}|{{ name ?? x }}', { name: 'Ada' })).toBe('Ada|Ada|Ada');
  });

  it('takes keys with dots, dashes and spaces as flat names', () => {
    const vars = { 'user.name': 'Ada', 'first-name': 'Grace', 'First Name': 'Alan', user_id: 7 };
    expect(plain('{{user.name}} {{first-name}} {{First Name}} {{user_id}}', vars)).toBe('Ada Grace Alan 7');
  });

  it('reaches nested values with dotted paths when no flat key has that name (own keys only)', () => {
    const vars = { event: { orderId: 42, order: { total: '9.99', tags: ['a', 'b'] } }, 'event.orderId': undefined, name: '<b>' };
    expect(plain('{{event.order.total}} {{event.order.tags.1}} {{event.missing ?? none}} {{event.orderId.x}}', vars)).toBe('9.99 b none ');
    expect(plain('{{event.constructor}} {{name.length}}', vars)).toBe(' ');
    // A flat key of that exact name wins, even when it is undefined (then the fallback).
    expect(plain('{{event.orderId ?? flat}}', vars)).toBe('flat');
    expect(plain('{{event.orderId}}', { event: { orderId: 42 } })).toBe('42');
    expect(renderTemplate('{{event.html}} {{{event.html}}}', { event: { html: '<i>' } }, { escape: true })).toBe('&lt;i&gt; <i>');
  });

  it('fills every occurrence of a repeated key', () => {
    expect(html('{{x}}-{{x}}-{{{x}}}', { x: 'a<' })).toBe('a&lt;-a&lt;-a<');
  });

  it('leaves a template without tags unchanged', () => {
    const t = '<p>No tags, just {braces} and { {spaced} } and $& $1 patterns</p>';
    expect(html(t, { braces: 'x' })).toBe(t);
  });

  it('leaves text that is not a tag as written', () => {
    expect(html('{{ }}|{{}}|{{a?b}}|{{ ?? x}}')).toBe('{{ }}|{{}}|{{a?b}}|{{ ?? x}}');
    expect(html('{{{name}}', { name: 'Ada' })).toBe('{Ada');
  });

  it('does not read inherited properties', () => {
    expect(html('[{{constructor}}][{{toString ?? none}}][{{__proto__}}]')).toBe('[][none][]');
  });

  it('never re-scans inserted values', () => {
    expect(plain('{{a}}', { a: '{{b}}', b: 'nope' })).toBe('{{b}}');
    expect(html('{{a}}', { a: '$& $1 $$' })).toBe('$&amp; $1 $$');
  });

  it('renders pathological input in linear time', () => {
    const nasty = `{{ ${' '.repeat(100_000)}{{a ?? ${' '.repeat(100_000)}{{{${'x '.repeat(100_000)}`;
    const started = performance.now();
    expect(html(nasty)).toBe(nasty);
    // ~2 ms on two loaded cores (250 times less); a quadratic scan of 300 KB takes seconds or more.
    expect(performance.now() - started).toBeLessThan(500);
  });
});

describe('escapeHtml', () => {
  it('escapes the five HTML-special characters', () => {
    expect(escapeHtml(`<a href="x">'&'</a>`)).toBe('&lt;a href=&quot;x&quot;&gt;&#39;&amp;&#39;&lt;/a&gt;');
  });
});

describe('templateVariables', () => {
  it('lists each key once in order of first use, from every tag form', () => {
    expect(templateVariables('{{b}} {{{ a }}} {{c ?? "x"}} {{b}} {{ d.e-f }}')).toEqual(['b', 'a', 'c', 'd.e-f']);
  });

  it('ignores text that is not a tag', () => {
    expect(templateVariables('{{ }} {{}} {{a?b}} plain')).toEqual([]);
  });
});

describe('htmlToText', () => {
  it('keeps links as "text [url]" and a bare url once', () => {
    const text = htmlToText('<p>Read <a href="https://x.test/a">the post</a> or https://x.test/b: <a href="https://x.test/b">https://x.test/b</a></p>');
    expect(text).toBe('Read the post [https://x.test/a] or https://x.test/b: https://x.test/b');
  });

  it('drops images, styles, scripts and the head', () => {
    const text = htmlToText(
      '<html><head><title>Title</title><style>p{color:red}</style></head><body><p>Hi<img src="logo.png" alt="Logo"></p><script>alert(1)</script></body></html>',
    );
    expect(text).toBe('Hi');
  });

  it('wraps long paragraphs at 78 characters without splitting words or urls', () => {
    const url = `https://example.test/${'x'.repeat(100)}`;
    const text = htmlToText(`<p>${'word '.repeat(40)}</p><p>${url}</p>`);
    const lines = text.split('\n');
    for (const line of lines.filter((l) => l !== url)) expect(line.length).toBeLessThanOrEqual(78);
    expect(lines).toContain(url);
    expect(text.replace(/\s+/g, ' ')).toBe(`${'word '.repeat(40).trim()} ${url}`);
  });

  it('puts table cells on their own lines (layout tables do not glue words together)', () => {
    expect(htmlToText('<table><tr><td>Hello</td><td>World</td></tr><tr><th>Total</th><td>42</td></tr></table>')).toBe('Hello\nWorld\nTotal\n42');
  });

  it('keeps paragraphs and lists apart', () => {
    expect(htmlToText('<p>One</p><p>Two</p><ul><li>a</li><li>b</li></ul>')).toBe('One\n\nTwo\n\n * a\n * b');
  });

  it('takes the depth its caller measured instead of walking the body again (delivery measures it first)', () => {
    expect(htmlToText('<p>One</p><p>Two</p>', 2)).toBe('One\n\nTwo');
    // A depth over the limit gets the plain tag strip, whatever the body.
    expect(htmlToText('<p>One</p><p>Two</p>', MAX_HTML_DEPTH + 1)).toBe(stripTags('<p>One</p><p>Two</p>'));
    expect(stripTags('<p>One</p><p>Two</p>')).toBe('One Two');
  });
});
