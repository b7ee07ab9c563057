import { describe, expect, it } from 'vitest';
import { HTML_DEPTH_RULE, htmlDepth, MAX_HTML_DEPTH } from '../../src/mail/html-depth.js';
import { htmlToText, stripTags } from '../../src/mail/render.js';

const nested = (n: number, tag = 'div', inner = 'deep text') => `<${tag}>`.repeat(n) + inner + `</${tag}>`.repeat(n);

describe('htmlDepth: element nesting as the text-part parser builds it, in one linear pass', () => {
  it.each([
    ['plain text', 'no tags at all', 0],
    ['siblings', '<p>a</p><p>b</p><div>c</div>', 1],
    ['nesting', '<table><tr><td><b>x</b></td></tr></table>', 4],
    ['void and self-closed leaves count one level', '<div><br><img src="a.png"></div>', 2],
    ['unclosed paragraphs and list items do not nest', `<ul>${'<li>item'.repeat(400)}</ul>${'<p>para'.repeat(400)}`, 2],
    ['unclosed table cells and rows do not nest', `<table>${'<tr><td>a<td>b'.repeat(400)}</table>`, 3],
    ['a stray closing tag is ignored', '</div></span><b>x</b>', 1],
    ['a closing tag closes back to its element', '<div><b><i>x</div><p>y</p>', 3],
    ['comments and declarations hold no tags', '<!DOCTYPE html><!-- <div><div><div> --><p>x</p>', 1],
    ['script and style text holds no tags', '<script>if (a<b) "<div><div><div>"</script><style>a>b{}</style>', 1],
    ['a quoted > inside an attribute', '<a title="x > y" href=\'<b>\'>t</a>', 1],
    ['<div/> opens a div in HTML', '<div/>'.repeat(5), 5],
    ['self-closed elements inside svg are leaves', `<svg>${'<path d="M0"/>'.repeat(400)}</svg>`, 2],
    ['an unterminated tag at the end is text', 'a < b and c<d', 0],
  ])('%s', (_name, html, depth) => {
    expect(htmlDepth(html)).toBe(depth);
  });

  it('stops counting just above the limit', () => {
    expect(htmlDepth(nested(MAX_HTML_DEPTH))).toBe(MAX_HTML_DEPTH);
    expect(htmlDepth(nested(3000))).toBe(MAX_HTML_DEPTH + 1);
    expect(HTML_DEPTH_RULE.ok(nested(MAX_HTML_DEPTH))).toBe(true);
    expect(HTML_DEPTH_RULE.ok(nested(MAX_HTML_DEPTH + 1))).toBe(false);
    expect(HTML_DEPTH_RULE.ok(nested(3000, 'b'))).toBe(false);
  });

  it('is linear on inputs built to make a scanner backtrack or rescan (1 MB each)', () => {
    const inputs = [
      '<'.repeat(1_000_000),
      `<div ${'a="'.repeat(300_000)}`,
      `${'<div>'.repeat(200)}${'</nope>'.repeat(140_000)}`,
      `<script>${'<x'.repeat(500_000)}`,
      `${'<!--'.repeat(250_000)}`,
    ];
    for (const html of inputs) {
      const started = performance.now();
      htmlDepth(html);
      // Each takes under 60 ms on two loaded cores; a quadratic scan of these takes minutes.
      expect(performance.now() - started, html.slice(0, 20)).toBeLessThan(2_000);
    }
  });
});

describe('htmlToText on pathological input', () => {
  it('never throws on 3,000 or 100,000 nested elements: the plain tag strip takes over', () => {
    for (const n of [3000, 100_000]) {
      for (const tag of ['div', 'b', 'table']) {
        const started = performance.now();
        expect(htmlToText(nested(n, tag, 'x &amp; y'))).toBe('x & y');
        // Under 25 ms each on two loaded cores: the bound is for a quadratic converter (seconds to minutes).
        expect(performance.now() - started, `${n} ${tag}`).toBeLessThan(2_000);
      }
    }
  });

  it('never hands deep HTML to the converter: its parser closes tags by scanning the open stack (this input took 18 s there)', () => {
    const started = performance.now();
    expect(htmlToText(`${'<div>'.repeat(20_000)}text${'</nope>'.repeat(100_000)}`)).toBe('text');
    // ~11 ms on two loaded cores, against the converter's 18 s.
    expect(performance.now() - started).toBeLessThan(2_000);
  });

  it('keeps the html-to-text conversion for HTML within the limit', () => {
    // 255 divs and the link: 256 levels, the most allowed.
    expect(htmlToText(nested(MAX_HTML_DEPTH - 1, 'div', '<a href="https://example.com/x">docs</a>'))).toBe('docs [https://example.com/x]');
  });

  it('stripTags: text without tags, script and style dropped, entities decoded, blanks collapsed', () => {
    expect(stripTags('<p>Hello&nbsp;<b>world</b></p>\n\n  <script>var a = "<p>";</script><STYLE>p{}</STYLE><p>a &#x41; &#66; &bogus; &lt;3</p><')).toBe(
      'Hello world\na A B &bogus; <3',
    );
  });
});
