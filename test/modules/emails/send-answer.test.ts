import { serializerCompiler } from 'fastify-type-provider-zod';
import { describe, expect, it } from 'vitest';
import { serializeSendAnswer } from '../../../src/modules/emails/send.routes.js';
import { SendResponse } from '../../../src/modules/emails/send.schema.js';

/** The 200 answer of POST /v1/send written by hand says what the app's zod serializer would. */
const zodSerialize = serializerCompiler({ schema: SendResponse, method: 'POST', url: '/v1/send', httpStatus: '200' }) as (data: unknown) => string;

const email = (n: number) => ({
  contact: { id: `0b8f5f0e-2c1d-4c43-9a57-3c2a4f1d7e1${n}`, email: `user${n}@example.com` },
  email: `6a1f7c2e-91b4-4d0a-8f3e-5b2c9d7e4a2${n}`,
});

describe('serializeSendAnswer', () => {
  it('writes the same JSON as the zod serializer, extra fields left out', () => {
    for (const emails of [[email(1)], [email(1), email(2), email(3)], []]) {
      const answer = { success: true as const, data: { emails, timestamp: '2026-01-01T12:00:00.000Z' } };
      expect(serializeSendAnswer(answer)).toBe(zodSerialize(answer));
      const extra = { ...answer, debug: 1, data: { ...answer.data, more: 2, emails: emails.map((e) => ({ ...e, row: {}, contact: { ...e.contact, data: {} } })) } };
      expect(serializeSendAnswer(extra)).toBe(zodSerialize(extra));
    }
  });
});
