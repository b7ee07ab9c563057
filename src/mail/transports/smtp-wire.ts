import { StringDecoder } from 'node:string_decoder';

/** One complete SMTP reply (RFC 5321 4.2: `250-first`, `250-…`, `250 last`). */
export interface SmtpReply {
  code: number;
  /** Every line as received (code included), joined by `\n`: what errors and results show. */
  text: string;
  lines: string[];
}

/**
 * Splits what the server sends into replies. A line whose fourth character is `-` continues the
 * reply; any other line ends it. `onReply` gets each complete reply in order.
 */
export function replyParser(onReply: (reply: SmtpReply) => void): (chunk: Buffer) => void {
  const decoder = new StringDecoder('utf8');
  let partial = '';
  let lines: string[] = [];
  return (chunk) => {
    const parts = (partial + decoder.write(chunk)).split('\n');
    partial = parts.pop() ?? '';
    for (const part of parts) {
      const line = part.endsWith('\r') ? part.slice(0, -1) : part;
      lines.push(line);
      if (line.charAt(3) === '-') continue;
      const done = lines;
      lines = [];
      const code = Number(done[0]?.slice(0, 3));
      onReply({ code: Number.isInteger(code) ? code : 0, text: done.join('\n'), lines: done });
    }
  };
}

const DOT = 0x2e;
const LF = 0x0a;
const CR = 0x0d;

/**
 * The message as DATA carries it (RFC 5321 4.5.2): a `.` at the start of a line is doubled. Line
 * ends are sent as given (the message is built with CRLF). Returns the input itself when no line
 * starts with a dot (the usual case: no copy).
 */
export function dotStuff(raw: Buffer): Buffer {
  let at = raw[0] === DOT ? 0 : raw.indexOf('\n.');
  if (at === -1) return raw;
  const parts: Buffer[] = [];
  let from = 0;
  while (at !== -1) {
    const dot = raw[at] === DOT ? at : at + 1;
    parts.push(raw.subarray(from, dot + 1));
    from = dot; // the dot goes out twice: once closing this part, once opening the next
    at = raw.indexOf('\n.', dot);
  }
  parts.push(raw.subarray(from));
  return Buffer.concat(parts);
}

/** What follows the message's data to end it: the terminating `.` line, on a line of its own. */
export function endOfData(raw: Buffer): Buffer {
  const endsWithLine = raw.length >= 2 && raw[raw.length - 2] === CR && raw[raw.length - 1] === LF;
  return raw.length === 0 || endsWithLine ? END_AFTER_LINE : END_AFTER_TEXT;
}

const END_AFTER_LINE = Buffer.from('.\r\n');
const END_AFTER_TEXT = Buffer.from('\r\n.\r\n');
