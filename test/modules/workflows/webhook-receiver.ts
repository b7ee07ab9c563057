import { createHmac, timingSafeEqual } from 'node:crypto';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import type { WebhookVariables } from '../../../src/modules/workflows/webhook/render-request.js';

/** One request as the receiver saw it: the raw body is the exact bytes, as text. */
export interface Received {
  method: string;
  url: string;
  headers: http.IncomingHttpHeaders;
  rawHeaders: string[];
  body: string;
}

type Answer = { status: number; body?: string; headers?: Record<string, string> } | 'hang';

/** A real HTTP receiver on loopback; answers from `answers` in turn, then 200. */
export interface Receiver {
  readonly port: number;
  readonly url: string;
  readonly received: Received[];
  answers: Answer[];
  close(): Promise<void>;
}

export async function startReceiver(): Promise<Receiver> {
  const received: Received[] = [];
  const hanging = new Set<http.ServerResponse>();
  const state = { answers: [] as Answer[] };
  const server = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      received.push({ method: req.method ?? '', url: req.url ?? '', headers: req.headers, rawHeaders: req.rawHeaders, body: Buffer.concat(chunks).toString('utf8') });
      const answer = state.answers.shift() ?? { status: 200, body: 'ok' };
      if (answer === 'hang') {
        hanging.add(res);
        return;
      }
      res.writeHead(answer.status, answer.headers).end(answer.body ?? '');
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    port,
    url: `http://127.0.0.1:${port}`,
    received,
    get answers() {
      return state.answers;
    },
    set answers(a: Answer[]) {
      state.answers = a;
    },
    close: async () => {
      for (const res of hanging) res.destroy();
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}

// docs/workflows.md "Verifying a signature", copied as written there.
export function verifyWebhook(secret: string, signatureHeader: string, rawBody: string, now = Date.now()): boolean {
  const parts = Object.fromEntries(signatureHeader.split(',').map((p) => p.split('=', 2)));
  const t = Number(parts.t);
  if (!Number.isInteger(t) || Math.abs(now / 1000 - t) > 300) return false; // older than 5 minutes (or ahead)
  const expected = createHmac('sha256', secret).update(`${t}.${rawBody}`).digest();
  const given = Buffer.from(parts.v1 ?? '', 'hex');
  return given.length === expected.length && timingSafeEqual(given, expected);
}

export const SECRET = `whsec_${'ab'.repeat(32)}`;

export function variables(overrides: Partial<WebhookVariables> = {}): WebhookVariables {
  return {
    contact: { id: '0190c0de-0000-7000-8000-000000000001', email: 'ada@example.com', subscribed: true, data: { plan: 'pro', name: 'Ada' } },
    event: { orderId: 'o-1' },
    context: { source: 'test' },
    workflow: { id: '0190c0de-0000-7000-8000-0000000000aa', name: 'Onboarding' },
    execution: { id: '0190c0de-0000-7000-8000-0000000000ee', startedAt: '2025-01-02T03:04:05.678Z' },
    ...overrides,
  };
}
