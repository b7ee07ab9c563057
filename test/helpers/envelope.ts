import type { LightMyRequestResponse } from 'fastify';
import { expect } from 'vitest';

/** Asserts the spec's error envelope and returns its `error` object. */
export function expectEnvelope(res: LightMyRequestResponse, status: number, code: string) {
  expect(res.statusCode, res.body).toBe(status);
  expect(res.headers['content-type']).toMatch(/^application\/json/);
  const body = res.json();
  expect(body.success).toBe(false);
  expect(body.timestamp).toMatch(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/);
  expect(body.error).toMatchObject({ code, statusCode: status, message: expect.any(String) });
  expect(body.error.requestId).toMatch(/^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/);
  expect(res.headers['x-request-id']).toBe(body.error.requestId);
  return body.error;
}
