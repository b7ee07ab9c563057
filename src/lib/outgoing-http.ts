import type { IncomingMessage, RequestOptions } from 'node:http';
import { bareHost, pinnedLookup, type ResolvedAddress } from './ssrf.js';

/** Read at most this much of an answer; the rest is dropped with the connection. */
const MAX_ANSWER_BYTES = 64 * 1024;
/** Characters of an answer kept for logs and step outputs. */
const EXCERPT_CHARS = 1_000;

/** The URL without its credentials, to store and show in logs and emails. */
export function safeUrl(url: string | URL): string {
  try {
    const copy = new URL(url);
    copy.username = '';
    copy.password = '';
    return copy.href;
  } catch {
    return String(url);
  }
}

/**
 * Where an outgoing call goes: `url`'s port, path and credentials, connected to the address the
 * SSRF guard checked (src/lib/ssrf.ts) and nowhere else.
 */
export function requestTarget(url: URL, address: ResolvedAddress): RequestOptions {
  const secure = url.protocol === 'https:';
  return {
    protocol: url.protocol,
    host: bareHost(url.hostname),
    port: url.port || (secure ? 443 : 80),
    path: `${url.pathname}${url.search}`,
    auth: url.username || url.password ? `${decodeURIComponent(url.username)}:${decodeURIComponent(url.password)}` : undefined,
    lookup: pinnedLookup(address),
  };
}

/** Why an answer with this status is a failure; null for 2xx (redirects are never followed). */
export function statusError(status: number): string | null {
  if (status >= 200 && status < 300) return null;
  return status >= 300 && status < 400 ? `HTTP ${status}: redirects are not followed` : `HTTP ${status}`;
}

function excerptOf(chunks: Buffer[]): string {
  const text = Buffer.concat(chunks).subarray(0, MAX_ANSWER_BYTES).toString('utf8');
  if (text.length <= EXCERPT_CHARS) return text;
  const cut = text.slice(0, EXCERPT_CHARS);
  return /[\ud800-\udbff]$/.test(cut) ? cut.slice(0, -1) : cut;
}

/**
 * The first EXCERPT_CHARS characters of an answer's body. Reads at most MAX_ANSWER_BYTES, then
 * drops the connection; rejects when the connection fails or closes before the answer ends.
 */
export function readExcerpt(res: IncomingMessage): Promise<string> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    const done = () => resolve(excerptOf(chunks));
    res.on('data', (chunk: Buffer) => {
      if (size >= MAX_ANSWER_BYTES) return;
      chunks.push(chunk);
      size += chunk.length;
      if (size >= MAX_ANSWER_BYTES) {
        done();
        res.destroy();
      }
    });
    res.on('end', done);
    res.on('error', reject);
    res.on('close', () => reject(new Error('the connection closed before the answer ended')));
  });
}
