import type { AddressInfo } from 'node:net';
import Fastify, { type FastifyInstance } from 'fastify';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { bodyTimeoutPlugin } from '../../src/http/body-timeout.js';
import { requestHead, trickle } from '../helpers/raw-http.js';

/**
 * Which bodies get the deadline's timer and wrapper stream (`request.bodyDeadline` is set with
 * them): only those still on their way once the read that brought the headers is handled, and
 * uploads. The 408 itself is tested over the whole app in slow-clients.test.ts.
 */
let app: FastifyInstance;
let port: number;

beforeAll(async () => {
  app = Fastify();
  await app.register(bodyTimeoutPlugin, { bodyMs: 2000, uploadMs: 4000 });
  app.post('/probe', async (request) => ({ deadline: request.bodyDeadline !== undefined, body: request.body }));
  app.get('/probe', async (request) => ({ deadline: request.bodyDeadline !== undefined }));
  await app.listen({ host: '127.0.0.1', port: 0 });
  port = (app.server.address() as AddressInfo).port;
});

afterAll(async () => {
  await app?.close();
});

const json = { email: 'ada@example.com', event: 'signed_up', data: { plan: 'pro' } };

function post(burst: number | 'all', intervalMs = 50) {
  const body = Buffer.from(JSON.stringify(json));
  const head = requestHead('POST', '/probe', { 'content-type': 'application/json' }, body.length);
  return trickle(port, { head, body, burst: burst === 'all' ? body.length : burst }, { intervalMs, deadlineMs: 10_000 });
}

describe('the body deadline', () => {
  it('is not armed for a body that came with its headers (one write)', async () => {
    const answer = await post('all');
    expect(answer.status, answer.body).toBe(200);
    expect(JSON.parse(answer.body)).toEqual({ deadline: false, body: json });
  });

  it('is not armed for a request without a body', async () => {
    const answer = await trickle(port, { head: 'GET /probe HTTP/1.1\r\nhost: 127.0.0.1\r\n\r\n', body: Buffer.alloc(0), burst: 0 }, { intervalMs: 50, deadlineMs: 10_000 });
    expect(answer.status, answer.body).toBe(200);
    expect(JSON.parse(answer.body)).toEqual({ deadline: false });
  });

  it('is armed for a body still on its way, which is then read whole', async () => {
    // All but the last 3 bytes at once, then a byte every 50 ms.
    const answer = await post(Buffer.byteLength(JSON.stringify(json)) - 3);
    expect(answer.status, answer.body).toBe(200);
    expect(JSON.parse(answer.body)).toEqual({ deadline: true, body: json });
  });
});
