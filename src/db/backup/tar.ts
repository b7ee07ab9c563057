import { createHash } from 'node:crypto';
import { once } from 'node:events';
import type { Writable } from 'node:stream';

// A minimal POSIX ustar writer and reader: regular files and directories only, names up to
// 255 bytes, sizes up to 8 GiB (PostgreSQL's files are at most 1 GiB segments). Own code because
// the only tar package in node_modules (tar-stream) comes with a devDependency, absent from a
// production install; the archive stays a standard .tar.gz that `tar xzf` reads.

const BLOCK = 512;
const MAX_SIZE = 8 ** 11 - 1;

export type EntryType = 'file' | 'directory';

export interface EntryHeader {
  readonly name: string;
  readonly type: EntryType;
  readonly mode: number;
  readonly size: number;
  /** Seconds since the epoch. */
  readonly mtime: number;
}

/** The archive is damaged or not one of ours: a message for the operator. */
export class ArchiveError extends Error {}

function octal(buf: Buffer, offset: number, length: number, value: number): void {
  buf.write(`${value.toString(8).padStart(length - 1, '0')}\0`, offset, length, 'ascii');
}

function splitName(name: string): { prefix: string; base: string } {
  if (Buffer.byteLength(name) <= 100) return { prefix: '', base: name };
  for (let i = name.indexOf('/'); i !== -1; i = name.indexOf('/', i + 1)) {
    const prefix = name.slice(0, i);
    const base = name.slice(i + 1);
    if (Buffer.byteLength(prefix) <= 155 && Buffer.byteLength(base) <= 100) return { prefix, base };
  }
  throw new Error(`path too long for the archive: ${name}`);
}

function header(h: EntryHeader): Buffer {
  const buf = Buffer.alloc(BLOCK);
  const { prefix, base } = splitName(h.type === 'directory' ? `${h.name}/` : h.name);
  buf.write(base, 0, 100, 'utf8');
  octal(buf, 100, 8, h.mode & 0o7777);
  octal(buf, 108, 8, 0);
  octal(buf, 116, 8, 0);
  octal(buf, 124, 12, h.type === 'file' ? h.size : 0);
  octal(buf, 136, 12, Math.max(0, Math.floor(h.mtime)));
  buf.write(h.type === 'file' ? '0' : '5', 156, 1, 'ascii');
  buf.write('ustar\0' + '00', 257, 8, 'ascii');
  buf.write(prefix, 345, 155, 'utf8');
  buf.fill(' ', 148, 156);
  let sum = 0;
  for (const byte of buf) sum += byte;
  buf.write(`${sum.toString(8).padStart(6, '0')}\0 `, 148, 8, 'ascii');
  return buf;
}

/** Writes a tar stream to `out`, waiting for it to drain (backpressure). */
export class TarWriter {
  constructor(private readonly out: Writable) {}

  private async write(chunk: Buffer): Promise<void> {
    if (!this.out.write(chunk)) await once(this.out, 'drain');
  }

  async directory(name: string, mode: number, mtime: number): Promise<void> {
    await this.write(header({ name, type: 'directory', mode, size: 0, mtime }));
  }

  /**
   * A file of exactly `size` bytes from `source`: a source that ends early is padded with zeros
   * and one that goes on is cut (a file written to during an online backup; the WAL repairs it).
   * Returns the SHA-256 of the bytes written.
   */
  async file(h: Omit<EntryHeader, 'type'>, source: AsyncIterable<Buffer> | Iterable<Buffer>): Promise<string> {
    if (h.size > MAX_SIZE) throw new Error(`file too large for the archive: ${h.name}`);
    await this.write(header({ ...h, type: 'file' }));
    const hash = createHash('sha256');
    let left = h.size;
    for await (const chunk of source) {
      if (left === 0) break;
      const part = chunk.length > left ? chunk.subarray(0, left) : chunk;
      hash.update(part);
      await this.write(part);
      left -= part.length;
    }
    while (left > 0) {
      const zeros = Buffer.alloc(Math.min(left, 1 << 16));
      hash.update(zeros);
      await this.write(zeros);
      left -= zeros.length;
    }
    const pad = (BLOCK - (h.size % BLOCK)) % BLOCK;
    if (pad) await this.write(Buffer.alloc(pad));
    return hash.digest('hex');
  }

  async bytes(name: string, data: Buffer, mode = 0o600): Promise<string> {
    return this.file({ name, mode, size: data.length, mtime: Date.now() / 1000 }, [data]);
  }

  /** The end-of-archive marker: two zero blocks. */
  async end(): Promise<void> {
    await this.write(Buffer.alloc(BLOCK * 2));
  }
}

/** Pulls exact byte counts out of a stream of chunks. */
class ByteReader {
  private buffered: Buffer[] = [];
  private length = 0;
  constructor(private readonly source: AsyncIterator<Buffer>) {}

  private async fill(n: number): Promise<boolean> {
    while (this.length < n) {
      const next = await this.source.next();
      if (next.done) return false;
      this.buffered.push(next.value);
      this.length += next.value.length;
    }
    return true;
  }

  /** Up to `max` bytes (at least one), or undefined at the end of the stream. */
  async some(max: number): Promise<Buffer | undefined> {
    if (!(await this.fill(1))) return undefined;
    const [first] = this.buffered;
    const joined = this.buffered.length === 1 && first ? first : Buffer.concat(this.buffered);
    const out = joined.subarray(0, max);
    const rest = joined.subarray(out.length);
    this.buffered = rest.length ? [rest] : [];
    this.length = rest.length;
    return out;
  }

  async exactly(n: number): Promise<Buffer> {
    if (!(await this.fill(n))) throw new ArchiveError('the archive ends early (truncated file?)');
    const parts: Buffer[] = [];
    for (let need = n; need > 0; ) {
      const part = await this.some(need);
      if (!part) throw new ArchiveError('the archive ends early (truncated file?)');
      parts.push(part);
      need -= part.length;
    }
    return Buffer.concat(parts);
  }
}

function readOctal(buf: Buffer, offset: number, length: number): number {
  const text = buf.toString('ascii', offset, offset + length).replace(/[\0 ]+$/, '').trim();
  if (!/^[0-7]*$/.test(text)) throw new ArchiveError('not a tar archive (bad number in a header)');
  return text ? parseInt(text, 8) : 0;
}

function text(buf: Buffer, offset: number, length: number): string {
  const raw = buf.subarray(offset, offset + length);
  const end = raw.indexOf(0);
  return raw.toString('utf8', 0, end === -1 ? length : end);
}

/** A relative path without `..`, or an ArchiveError: an archive never writes outside its target. */
function safeName(name: string): string {
  const trimmed = name.replace(/\/+$/, '');
  const parts = trimmed.split('/');
  if (!trimmed || trimmed.startsWith('/') || parts.some((p) => p === '' || p === '.' || p === '..')) {
    throw new ArchiveError(`unsafe path in the archive: ${JSON.stringify(name)}`);
  }
  return trimmed;
}

function parseHeader(block: Buffer): EntryHeader {
  let sum = 0;
  block.forEach((byte, i) => (sum += i >= 148 && i < 156 ? 32 : byte));
  if (readOctal(block, 148, 8) !== sum) throw new ArchiveError('not a tar archive (header checksum)');
  const flag = block.toString('latin1', 156, 157);
  if (flag !== '0' && flag !== '\0' && flag !== '5') throw new ArchiveError(`unexpected entry type "${flag}" in the archive`);
  const prefix = text(block, 345, 155);
  const base = text(block, 0, 100);
  return {
    name: safeName(prefix ? `${prefix}/${base}` : base),
    type: flag === '5' ? 'directory' : 'file',
    mode: readOctal(block, 100, 8),
    size: flag === '5' ? 0 : readOctal(block, 124, 12),
    mtime: readOctal(block, 136, 12),
  };
}

export interface Entry extends EntryHeader {
  /** The file's bytes: must be consumed before the next entry is read. */
  readonly body: AsyncIterable<Buffer>;
}

/** The entries of a tar stream, in order; throws ArchiveError on a damaged archive. */
export async function* readTar(chunks: AsyncIterable<Buffer>): AsyncGenerator<Entry> {
  const reader = new ByteReader(chunks[Symbol.asyncIterator]());
  for (;;) {
    const block = await reader.exactly(BLOCK);
    if (block.every((b) => b === 0)) return;
    const h = parseHeader(block);
    let left = h.size;
    async function* body(): AsyncGenerator<Buffer> {
      while (left > 0) {
        const part = await reader.some(left);
        if (!part) throw new ArchiveError('the archive ends early (truncated file?)');
        left -= part.length;
        yield part;
      }
    }
    yield { ...h, body: body() };
    while (left > 0) {
      const part = await reader.some(left);
      if (!part) throw new ArchiveError('the archive ends early (truncated file?)');
      left -= part.length;
    }
    const pad = (BLOCK - (h.size % BLOCK)) % BLOCK;
    if (pad) await reader.exactly(pad);
  }
}
