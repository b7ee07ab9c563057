/**
 * Just enough MIME to read the machine-readable parts of a report (multipart/report: RFC 6522):
 * mailparser folds message/delivery-status into the text, so the report's parts are split here.
 * Header fields are unfolded; base64 and quoted-printable bodies are decoded.
 */

export interface MimePart {
  /** Lower-cased field names; the first occurrence of each. */
  headers: Map<string, string>;
  /** The content type, lower-cased, without parameters. */
  type: string;
  params: Map<string, string>;
  body: Buffer;
}

/** `Name: value` fields with folded lines unfolded; the first occurrence of each name wins. */
export function parseFields(text: string): Map<string, string> {
  const fields = new Map<string, string>();
  let name: string | undefined;
  let value = '';
  const flush = () => {
    if (name !== undefined && !fields.has(name)) fields.set(name, value.trim());
  };
  for (const line of text.split(/\r?\n/)) {
    if (/^[ \t]/.test(line) && name !== undefined) {
      value += ` ${line.trim()}`;
      continue;
    }
    flush();
    const colon = line.indexOf(':');
    if (colon <= 0) {
      name = undefined;
      continue;
    }
    name = line.slice(0, colon).trim().toLowerCase();
    value = line.slice(colon + 1);
  }
  flush();
  return fields;
}

/** `type/subtype; a=b; c="d"` → the type and its parameters (names lower-cased). */
export function parseContentType(value: string | undefined): { type: string; params: Map<string, string> } {
  const params = new Map<string, string>();
  if (!value) return { type: 'text/plain', params };
  const [head = '', ...rest] = value.split(';');
  for (const p of rest.join(';').matchAll(/([\w-]+)\s*=\s*(?:"((?:[^"\\]|\\.)*)"|([^;\s]+))/g)) {
    params.set((p[1] ?? '').toLowerCase(), p[2] !== undefined ? p[2].replace(/\\(.)/g, '$1') : (p[3] ?? ''));
  }
  return { type: head.trim().toLowerCase() || 'text/plain', params };
}

function decodeQuotedPrintable(text: string): Buffer {
  const bytes: number[] = [];
  const soft = text.replace(/=\r?\n/g, '');
  for (let i = 0; i < soft.length; i++) {
    const ch = soft.charCodeAt(i);
    const hex = soft.slice(i + 1, i + 3);
    if (ch === 61 && /^[0-9A-Fa-f]{2}$/.test(hex)) {
      bytes.push(parseInt(hex, 16));
      i += 2;
    } else bytes.push(ch & 0xff);
  }
  return Buffer.from(bytes);
}

/** Splits a message (or part) into its header fields and body at the first empty line. */
function splitHead(raw: Buffer): { head: string; body: Buffer } {
  const crlf = raw.indexOf('\r\n\r\n');
  const lf = raw.indexOf('\n\n');
  if (crlf < 0 && lf < 0) return { head: raw.toString('latin1'), body: Buffer.alloc(0) };
  const useCrlf = crlf >= 0 && (lf < 0 || crlf <= lf + 1);
  const at = useCrlf ? crlf : lf;
  return { head: raw.subarray(0, at).toString('latin1'), body: raw.subarray(at + (useCrlf ? 4 : 2)) };
}

export function parsePart(raw: Buffer): MimePart {
  const { head, body } = splitHead(raw);
  const headers = parseFields(head);
  const { type, params } = parseContentType(headers.get('content-type'));
  const encoding = (headers.get('content-transfer-encoding') ?? '').trim().toLowerCase();
  let decoded = body;
  if (encoding === 'base64') decoded = Buffer.from(body.toString('latin1').replace(/[^A-Za-z0-9+/=]/g, ''), 'base64');
  else if (encoding === 'quoted-printable') decoded = decodeQuotedPrintable(body.toString('latin1'));
  return { headers, type, params, body: decoded };
}

/** The direct children of a multipart part (empty for any other type). */
export function childrenOf(part: MimePart): MimePart[] {
  const boundary = part.params.get('boundary');
  if (!part.type.startsWith('multipart/') || !boundary) return [];
  const text = part.body.toString('latin1');
  const delimiter = `--${boundary}`;
  const children: MimePart[] = [];
  let pos = text.indexOf(delimiter);
  while (pos >= 0) {
    const after = pos + delimiter.length;
    if (text.startsWith('--', after)) break;
    const start = text.indexOf('\n', after);
    if (start < 0) break;
    const next = text.indexOf(`\n${delimiter}`, start);
    const end = next < 0 ? text.length : next;
    const chunk = text.slice(start + 1, end).replace(/\r$/, '');
    children.push(parsePart(Buffer.from(chunk, 'latin1')));
    pos = next < 0 ? -1 : next + 1;
  }
  return children;
}

/** Every part of the message, depth first, at most `limit` of them (a bounded walk over hostile input). */
export function walkParts(root: MimePart, limit = 50): MimePart[] {
  const out: MimePart[] = [];
  const visit = (part: MimePart, depth: number) => {
    if (out.length >= limit || depth > 5) return;
    out.push(part);
    for (const child of childrenOf(part)) visit(child, depth + 1);
  };
  visit(root, 0);
  return out;
}
