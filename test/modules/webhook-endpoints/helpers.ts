import { createHmac, timingSafeEqual } from 'node:crypto';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import type { FastifyInstance } from 'fastify';
import { expect } from 'vitest';
import type { Db } from '../../../src/db/connection.js';
import { bearer, type TestProject } from '../../helpers/accounts.js';
import { until } from '../../helpers/poll.js';

/** One call as the receiver saw it; `body` is the exact text (what the signature covers). */
export interface Call {
  path: string;
  headers: http.IncomingHttpHeaders;
  body: string;
  json: { id: string; type: string; createdAt: string; data: Record<string, unknown> };
}

/** A reply; `delayMs` holds it back, `hang` never answers (the caller's timeout ends it). */
type Answer = { status: number; body?: string; headers?: Record<string, string>; delayMs?: number } | 'hang';

/**
 * A real HTTP receiver on loopback. Every call is recorded by path; `answer(path)` decides the
 * reply (default 200 "ok"), so each test works on a path of its own.
 */
export interface Receiver {
  readonly url: string;
  readonly calls: Call[];
  callsTo(path: string): Call[];
  /** Most calls of `path` in flight at once, the client sockets (remote ports) they came on, the calls open now. */
  concurrency(path: string): { max: number; sockets: number; open: number };
  /** The reply to the next calls of `path` (default 200). */
  answer(path: string, answer: Answer | ((n: number) => Answer)): void;
  close(): Promise<void>;
}

export async function startReceiver(): Promise<Receiver> {
  const calls: Call[] = [];
  const answers = new Map<string, Answer | ((n: number) => Answer)>();
  const inFlight = new Map<string, { now: number; max: number; sockets: Set<number> }>();
  const server = http.createServer((req, res) => {
    const f = inFlight.get(req.url ?? '') ?? { now: 0, max: 0, sockets: new Set<number>() };
    inFlight.set(req.url ?? '', f);
    f.now++;
    f.max = Math.max(f.max, f.now);
    f.sockets.add(req.socket.remotePort ?? 0);
    res.on('close', () => f.now--);
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const body = Buffer.concat(chunks).toString('utf8');
      const path = req.url ?? '';
      let json: Call['json'];
      try {
        json = JSON.parse(body);
      } catch {
        json = { id: '', type: '', createdAt: '', data: {} };
      }
      calls.push({ path, headers: req.headers, body, json });
      const a = answers.get(path);
      const answer = typeof a === 'function' ? a(calls.filter((c) => c.path === path).length) : (a ?? { status: 200, body: 'ok' });
      if (answer === 'hang') return;
      const reply = () => res.writeHead(answer.status, answer.headers).end(answer.body ?? '');
      if (answer.delayMs) setTimeout(reply, answer.delayMs);
      else reply();
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    calls,
    callsTo: (path) => calls.filter((c) => c.path === path),
    concurrency: (path) => ({ max: inFlight.get(path)?.max ?? 0, sockets: inFlight.get(path)?.sockets.size ?? 0, open: inFlight.get(path)?.now ?? 0 }),
    answer: (path, answer) => answers.set(path, answer),
    close: async () => {
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}

// docs/webhooks-outgoing.md "Verifying a call", as written there.
export function verifySignature(secret: string, header: string, rawBody: string, toleranceSeconds = 300): boolean {
  const parts = Object.fromEntries(header.split(',').map((p) => p.split('=', 2)));
  const t = Number(parts.t);
  if (!Number.isInteger(t) || Math.abs(Date.now() / 1000 - t) > toleranceSeconds) return false;
  const expected = createHmac('sha256', secret).update(`${t}.${rawBody}`).digest();
  const given = Buffer.from(parts.v1 ?? '', 'hex');
  return given.length === expected.length && timingSafeEqual(given, expected);
}

/** Asserts the call is signed with `secret` now (and not with a changed body or another secret). */
export function expectSigned(call: Call, secret: string): void {
  const header = String(call.headers['x-signature']);
  expect(header).toMatch(/^t=\d+,v1=[0-9a-f]{64}$/);
  expect(verifySignature(secret, header, call.body), 'signature').toBe(true);
  expect(verifySignature(secret, header, `${call.body} `), 'a changed body fails').toBe(false);
  expect(verifySignature(`${secret}x`, header, call.body), 'another secret fails').toBe(false);
  expect(Math.abs(Number(/t=(\d+)/.exec(header)?.[1]) - Date.now() / 1000)).toBeLessThan(60);
  expect(call.headers['x-webhook-id']).toBe(call.json.id);
  expect(call.headers['x-webhook-event']).toBe(call.json.type);
  expect(call.headers['content-type']).toBe('application/json');
}

/** POST /webhook-endpoints with the secret key; answers the endpoint with its secret. */
export async function registerEndpoint(app: FastifyInstance, project: TestProject, url: string, events: string[]): Promise<{ id: string; secret: string }> {
  const res = await app.inject({ method: 'POST', url: '/webhook-endpoints', headers: bearer(project.secret), payload: { url, events } });
  expect(res.statusCode, res.body).toBe(201);
  return res.json();
}

export const deliveriesOf = (db: Db, endpointId: string) =>
  db.db.selectFrom('webhook_deliveries').selectAll().where('endpoint_id', '=', endpointId).orderBy('id').execute();

/** Polls until `path` got `count` calls; returns them. */
export async function waitForCalls(r: Receiver, path: string, count: number, timeoutMs = 20_000): Promise<Call[]> {
  await until(`${count} calls to ${path}`, () => r.callsTo(path).length >= count, {
    timeoutMs,
    why: () => `got: ${r.callsTo(path).map((c) => c.json.type).join(', ')}`,
  });
  return r.callsTo(path);
}
