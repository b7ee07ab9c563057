/**
 * Content-Transfer-Encoding of a text part (RFC 2045), as the fast MIME path writes it: the
 * encoding nodemailer's MimeNode picks for the same string, the body in canonical form (every
 * line break, CRLF, LF or a lone CR, written as CRLF), lines of at most 76 characters.
 */

export type TransferEncoding = '7bit' | 'quoted-printable' | 'base64';

const LINE_BREAK = /\r\n|\r|\n/g;

/**
 * nodemailer's choice (MimeNode `getTransferEncoding`): 7bit for ASCII without controls other
 * than tab/CR/LF and without lines over 76 characters (nor over 128 KiB in all); otherwise
 * quoted-printable when Latin letters outnumber the other characters (controls and non-ASCII,
 * counted as UTF-16 units), else base64. One pass over the string instead of its regexes.
 */
export function transferEncodingOf(text: string): TransferEncoding {
  let plain = text.length <= 128 * 1024;
  let latin = 0;
  let other = 0;
  let line = 0;
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (c === 10 || c === 13) {
      line = 0;
      continue;
    }
    if (++line > 76) plain = false;
    if ((c >= 0x61 && c <= 0x7a) || (c >= 0x41 && c <= 0x5a)) latin++;
    else if (isOther(c)) other++;
  }
  if (plain && other === 0) return '7bit';
  return other < latin ? 'quoted-printable' : 'base64';
}

/** Not 7bit-safe (nodemailer's `isPlainText`): controls other than tab/CR/LF, anything past ASCII. */
const isOther = (c: number) => c >= 0x80 || c <= 0x08 || c === 0x0b || c === 0x0c || (c >= 0x0e && c <= 0x1f);

/** nodemailer's `_getTextEncoding`: Q when there are more Latin letters than other characters. */
export function prefersQ(text: string): boolean {
  let latin = 0;
  let other = 0;
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if ((c >= 0x61 && c <= 0x7a) || (c >= 0x41 && c <= 0x5a)) latin++;
    else if (isOther(c)) other++;
  }
  return other < latin;
}

/** The encoded body, ASCII, without a final line break after its last line. */
export function encodeBody(text: string, encoding: TransferEncoding): Buffer {
  if (encoding === '7bit') return Buffer.from(text.replace(LINE_BREAK, '\r\n'), 'latin1');
  if (encoding === 'base64') return base64Lines(Buffer.from(text.replace(LINE_BREAK, '\r\n'), 'utf8'));
  return quotedPrintable(Buffer.from(text, 'utf8'));
}

function base64Lines(bytes: Buffer): Buffer {
  const b64 = bytes.toString('base64');
  let out = '';
  for (let i = 0; i < b64.length; i += 76) out += i === 0 ? b64.slice(0, 76) : `\r\n${b64.slice(i, i + 76)}`;
  return Buffer.from(out, 'latin1');
}

const HEX = Buffer.from('0123456789ABCDEF', 'latin1');
const CR = 13;
const LF = 10;
/** Payload of a line before a soft break: 75 characters, then `=` (76, RFC 2045 §6.7 rule 5). */
const MAX_PAYLOAD = 75;

/**
 * Quoted-printable (RFC 2045 §6.7) of UTF-8 bytes: printable ASCII but `=` literal, space and
 * tab literal unless they end a line, everything else `=XX`; a multi-byte character is never split
 * across a soft line break. One pass into one buffer.
 */
export function quotedPrintable(src: Buffer): Buffer {
  const n = src.length;
  // Worst case: every byte as =XX (3), plus a 3-byte soft break per 63 characters or more.
  const out = Buffer.allocUnsafe(n * 3 + Math.ceil((n * 3) / 63) * 3 + 8);
  let o = 0;
  let col = 0;
  let i = 0;
  while (i < n) {
    const b = src[i] as number;
    if (b === CR || b === LF) {
      out[o++] = CR;
      out[o++] = LF;
      col = 0;
      i += b === CR && src[i + 1] === LF ? 2 : 1;
      continue;
    }
    let len = 1;
    let literal: boolean;
    if (b < 0x80) {
      if (b === 0x20 || b === 0x09) {
        const next = src[i + 1];
        literal = next !== undefined && next !== CR && next !== LF;
      } else {
        literal = b >= 0x21 && b <= 0x7e && b !== 0x3d;
      }
    } else {
      literal = false;
      len = b >= 0xf0 ? 4 : b >= 0xe0 ? 3 : b >= 0xc0 ? 2 : 1;
      if (i + len > n) len = n - i;
    }
    const width = literal ? 1 : 3 * len;
    if (col + width > MAX_PAYLOAD) {
      out[o++] = 0x3d;
      out[o++] = CR;
      out[o++] = LF;
      col = 0;
    }
    if (literal) {
      out[o++] = b;
    } else {
      for (let k = 0; k < len; k++) {
        const v = src[i + k] as number;
        out[o++] = 0x3d;
        out[o++] = HEX[v >> 4] as number;
        out[o++] = HEX[v & 15] as number;
      }
    }
    col += width;
    i += len;
  }
  return out.subarray(0, o);
}
