/**
 * How deeply an HTML body nests elements, measured without building a tree and without
 * recursion: one pass over the text with a stack of open tag names, in linear time, stopping as
 * soon as the limit is passed. Every HTML body the API accepts (/v1/send, templates, campaigns)
 * is checked with it, and the text-part conversion uses it to refuse the parser input that would
 * overflow its recursive walk (render.ts htmlToText).
 *
 * The nesting is counted as the HTML parser of the text part (htmlparser2, HTML mode) builds its
 * tree, so the number matches what delivery meets: void elements (`<br>`, `<img>`) hold nothing;
 * an opening tag closes the ones it implies (`<p>` closes an open `<p>`, `<td>` an open `<td>`,
 * `<li>` an open `<li>`), so unclosed paragraphs and list items do not nest; `</x>` closes back
 * to the last open `x` and is ignored when none is open; `<div/>` opens a div (HTML ignores the
 * slash) except inside `<svg>`/`<math>`; comments, declarations and the text of `<script>`,
 * `<style>` and `<title>` hold no tags.
 */

/** Deepest element nesting an accepted HTML body may have (documented in docs/sending.md). */
export const MAX_HTML_DEPTH = 256;

/** The validation rule every HTML body field applies (422 naming the field, code too_deep). */
export const HTML_DEPTH_RULE = {
  ok: (html: string): boolean => htmlDepth(html) <= MAX_HTML_DEPTH,
  code: 'too_deep',
  message: `HTML must not nest elements more than ${MAX_HTML_DEPTH} levels deep`,
} as const;

const VOID = new Set([
  'area', 'base', 'basefont', 'br', 'col', 'command', 'embed', 'frame', 'hr', 'img', 'input', 'isindex', 'keygen', 'link',
  'meta', 'param', 'source', 'track', 'wbr',
]);
const RAW_TEXT = new Set(['script', 'style', 'title']);
const FOREIGN = new Set(['svg', 'math']);

const P = ['p'];
const FORM = ['input', 'option', 'optgroup', 'select', 'button', 'datalist', 'textarea'];
/** Open elements an opening tag closes first (htmlparser2's openImpliesClose, HTML mode). */
const IMPLIES_CLOSE = new Map<string, ReadonlySet<string>>([
  ['tr', new Set(['tr', 'th', 'td'])],
  ['th', new Set(['th'])],
  ['td', new Set(['thead', 'th', 'td'])],
  ['body', new Set(['head', 'link', 'script'])],
  ['li', new Set(['li'])],
  ['option', new Set(['option'])],
  ['optgroup', new Set(['optgroup', 'option'])],
  ['dd', new Set(['dd', 'dt'])],
  ['dt', new Set(['dd', 'dt'])],
  ['rt', new Set(['rt', 'rp'])],
  ['rp', new Set(['rt', 'rp'])],
  ['tbody', new Set(['thead', 'tbody'])],
  ['tfoot', new Set(['thead', 'tbody'])],
  ...['select', 'input', 'output', 'button', 'datalist', 'textarea'].map((t) => [t, new Set(FORM)] as const),
  ...[
    'p', 'h1', 'h2', 'h3', 'h4', 'h5', 'h6', 'address', 'article', 'aside', 'blockquote', 'details', 'div', 'dl', 'fieldset',
    'figcaption', 'figure', 'footer', 'form', 'header', 'hr', 'main', 'nav', 'ol', 'pre', 'section', 'table', 'ul',
  ].map((t) => [t, new Set(P)] as const),
]);

const isLetter = (c: number) => (c >= 65 && c <= 90) || (c >= 97 && c <= 122);
const isSpace = (c: number) => c === 32 || c === 9 || c === 10 || c === 12 || c === 13;
const GT = 62;
const SLASH = 47;

/** The open-element stack, with a count per name so that "is an x open?" costs O(1). */
class OpenElements {
  private readonly names: string[] = [];
  private readonly counts = new Map<string, number>();
  private foreign = 0;

  get depth(): number {
    return this.names.length;
  }

  has(name: string): boolean {
    return (this.counts.get(name) ?? 0) > 0;
  }

  get inForeign(): boolean {
    return this.foreign > 0;
  }

  push(name: string): void {
    this.names.push(name);
    this.counts.set(name, (this.counts.get(name) ?? 0) + 1);
    if (FOREIGN.has(name)) this.foreign++;
  }

  private pop(): void {
    const name = this.names.pop();
    if (name === undefined) return;
    this.counts.set(name, (this.counts.get(name) ?? 1) - 1);
    if (FOREIGN.has(name)) this.foreign--;
  }

  /** Pops while the innermost open element is in `names`. */
  popWhileTopIn(names: ReadonlySet<string>): void {
    for (let top = this.names.at(-1); top !== undefined && names.has(top); top = this.names.at(-1)) this.pop();
  }

  /** Closes back to the innermost open `name` (inclusive); nothing when none is open. Amortised O(1). */
  closeTo(name: string): void {
    if (!this.has(name)) return;
    for (let top = this.names.at(-1); top !== undefined; top = this.names.at(-1)) {
      this.pop();
      if (top === name) return;
    }
  }
}

/** End of the tag that starts at `from` (index of its `>`, or the text's length): quoted attribute values may hold `>`. */
function tagEnd(html: string, from: number): number {
  let i = from;
  while (i < html.length) {
    const c = html.charCodeAt(i);
    if (c === GT) return i;
    if (c === 61 /* = */) {
      i++;
      while (i < html.length && isSpace(html.charCodeAt(i))) i++;
      const q = html.charCodeAt(i);
      if (q === 34 || q === 39) {
        const close = html.indexOf(q === 34 ? '"' : "'", i + 1);
        if (close === -1) return html.length;
        i = close + 1;
        continue;
      }
      continue;
    }
    i++;
  }
  return html.length;
}

/** Index after the tag name that starts at `from` (a letter), and the name lower-cased. */
function tagName(html: string, from: number): [string, number] {
  let i = from;
  while (i < html.length) {
    const c = html.charCodeAt(i);
    if (isSpace(c) || c === SLASH || c === GT) break;
    i++;
  }
  return [html.slice(from, i).toLowerCase(), i];
}

/**
 * The deepest element nesting of `html`, counted up to `limit + 1`: a result above `limit` means
 * "too deep" (the scan stops there). Linear in the length of `html`; never throws.
 */
export function htmlDepth(html: string, limit = MAX_HTML_DEPTH): number {
  const open = new OpenElements();
  let max = 0;
  let i = html.indexOf('<');
  while (i !== -1 && i < html.length - 1) {
    const next = html.charCodeAt(i + 1);
    if (html.startsWith('<!--', i)) {
      const end = html.indexOf('-->', i + 4);
      if (end === -1) break;
      i = html.indexOf('<', end + 3);
      continue;
    }
    if (next === 33 /* ! */ || next === 63 /* ? */) {
      const end = html.indexOf('>', i + 2);
      if (end === -1) break;
      i = html.indexOf('<', end + 1);
      continue;
    }
    if (next === SLASH && isLetter(html.charCodeAt(i + 2))) {
      const [name, after] = tagName(html, i + 2);
      const end = html.indexOf('>', after);
      if (end === -1) break; // an unterminated tag at the end is text
      // `</br>` is a <br>, and `</p>` with no <p> open an empty <p>: leaves.
      if (name === 'br' || (name === 'p' && !open.has('p'))) max = Math.max(max, open.depth + 1);
      else if (!VOID.has(name)) open.closeTo(name);
      i = html.indexOf('<', end + 1);
      continue;
    }
    if (!isLetter(next)) {
      i = html.indexOf('<', i + 1);
      continue;
    }
    const [name, after] = tagName(html, i + 1);
    const end = tagEnd(html, after);
    if (end >= html.length) break; // an unterminated tag at the end is text
    const selfClosing = html.charCodeAt(end - 1) === SLASH;
    const implied = IMPLIES_CLOSE.get(name);
    if (implied) open.popWhileTopIn(implied);
    // A void or self-closed element is a leaf: one level below the open ones, never open itself.
    const leaf = VOID.has(name) || (selfClosing && open.inForeign);
    if (!leaf) open.push(name);
    if (open.depth + (leaf ? 1 : 0) > max) {
      max = open.depth + (leaf ? 1 : 0);
      if (max > limit) return max;
    }
    if (RAW_TEXT.has(name) && !leaf) {
      // Raw text: no tags until its end tag, whatever it holds.
      const close = indexOfCaseless(html, `</${name}`, end + 1);
      if (close === -1) break;
      i = close;
      continue;
    }
    i = html.indexOf('<', end + 1);
  }
  return max;
}

/** `indexOf` ignoring ASCII case, for a lower-case `needle`; linear (no lower-cased copy of `html`). */
export function indexOfCaseless(html: string, needle: string, from: number): number {
  let i = html.indexOf('<', from);
  while (i !== -1) {
    if (html.slice(i, i + needle.length).toLowerCase() === needle) return i;
    i = html.indexOf('<', i + 1);
  }
  return -1;
}
