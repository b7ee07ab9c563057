import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestApp, type TestApp } from '../helpers/app.js';
import { bearer, newProject, type TestProject, uniqueEmail } from '../helpers/accounts.js';
import { expectEnvelope } from '../helpers/envelope.js';

let t: TestApp;
let project: TestProject;
beforeAll(async () => {
  t = await createTestApp();
  ({ project } = await newProject(t.app));
});
afterAll(() => t.close());

const secret = () => bearer(project.secret);
const post = (url: string, payload: unknown, headers: Record<string, string> = secret()) =>
  t.app.inject({ method: 'POST', url, headers, payload: payload as Record<string, unknown> });

describe('unknown body fields are named, with a "did you mean"', () => {
  it('`emial` on /v1/track: unrecognized_keys on the key, the suggestion, and email Required; nothing stored', async () => {
    const res = await post('/v1/track', { emial: 'ada@example.com', event: 'signed_up' }, bearer(project.public));
    const error = expectEnvelope(res, 422, 'VALIDATION_ERROR');
    expect(error.errors).toEqual([
      { field: 'emial', code: 'unrecognized_keys', message: 'Unknown field `emial`: did you mean `email`?' },
      { field: 'email', code: 'invalid_type', message: 'Required' },
    ]);
    expect(error.suggestion).toBe('Did you mean `email` instead of `emial`?');
    const events = await t.db.db.selectFrom('events').select('id').where('project_id', '=', project.id).execute();
    expect(events).toEqual([]);
  });

  it('`html` on /v1/send points at `body`', async () => {
    const res = await post('/v1/send', { to: 'ada@example.com', from: 'a@example.com', subject: 'Hi', html: '<p>x</p>' });
    const error = expectEnvelope(res, 422, 'VALIDATION_ERROR');
    expect(error.errors).toContainEqual({ field: 'html', code: 'unrecognized_keys', message: 'Unknown field `html`: did you mean `body`?' });
  });

  it('an otherwise valid body with an unknown field is refused, nested objects too, and nothing is stored', async () => {
    const email = uniqueEmail();
    const top = await post('/contacts', { email, subscribd: true });
    expect(expectEnvelope(top, 422, 'VALIDATION_ERROR').errors).toEqual([
      { field: 'subscribd', code: 'unrecognized_keys', message: 'Unknown field `subscribd`: did you mean `subscribed`?' },
    ]);
    const nested = await post('/v1/send', { to: [{ email: 'ada@example.com', nmae: 'Ada' }], from: 'a@example.com', subject: 'Hi', body: 'x' });
    expect(expectEnvelope(nested, 422, 'VALIDATION_ERROR').errors).toContainEqual({
      field: 'to.0.nmae',
      code: 'unrecognized_keys',
      message: 'Unknown field `nmae`: did you mean `name`?',
    });
    const far = await post('/contacts', { email, zzz: 1 });
    expect(expectEnvelope(far, 422, 'VALIDATION_ERROR').errors[0].message).toBe('Unknown field `zzz`: accepted here: email, subscribed, data');
    const contacts = await t.db.db.selectFrom('contacts').select('id').where('project_id', '=', project.id).where('email', '=', email).execute();
    expect(contacts).toEqual([]);
  });

  it('many unknown fields: the first 20 are listed, a long key shortened', async () => {
    const payload = Object.fromEntries(Array.from({ length: 5_000 }, (_, i) => [`${'k'.repeat(150)}${i}`, 1]));
    const errors = expectEnvelope(await post('/contacts', { email: uniqueEmail(), ...payload }), 422, 'VALIDATION_ERROR').errors;
    expect(errors).toHaveLength(20);
    expect(errors[0]).toEqual({
      field: `${'k'.repeat(100)}…`,
      code: 'unrecognized_keys',
      message: `Unknown field \`${'k'.repeat(100)}…\`: accepted here: email, subscribed, data`,
    });
  });

  it('free-form maps stay open: data, headers and condition trees take any key', async () => {
    const res = await post('/contacts', { email: uniqueEmail(), data: { emial: 'x', anything: 1 } });
    expect(res.statusCode, res.body).toBeLessThan(300);
    const track = await post('/v1/track', { email: uniqueEmail(), event: 'e', data: { plan: { value: 'pro', persistent: false } } }, bearer(project.public));
    expect(track.statusCode, track.body).toBe(200);
  });
});

describe('a wrong method on an existing path is 405 with Allow', () => {
  it('GET /v1/send', async () => {
    const res = await t.app.inject({ method: 'GET', url: '/v1/send' });
    const error = expectEnvelope(res, 405, 'METHOD_NOT_ALLOWED');
    expect(res.headers.allow).toBe('POST, OPTIONS');
    expect(error.message).toBe('Method GET is not allowed on /v1/send; allowed: POST, OPTIONS');
  });

  it('PUT /contacts/:id lists what the path has (GET and HEAD, PATCH, DELETE), without credentials', async () => {
    const res = await t.app.inject({ method: 'PUT', url: '/contacts/0190b6a2-0000-7000-8000-000000000000' });
    expectEnvelope(res, 405, 'METHOD_NOT_ALLOWED');
    expect(new Set(res.headers.allow?.toString().split(', '))).toEqual(new Set(['GET', 'HEAD', 'PATCH', 'DELETE', 'OPTIONS']));
  });

  it('a trailing slash and a query string do not change the answer; an unknown path stays 404', async () => {
    expect((await t.app.inject({ method: 'DELETE', url: '/v1/track/?x=1' })).headers.allow).toBe('POST, OPTIONS');
    expectEnvelope(await t.app.inject({ method: 'GET', url: '/v1/nothing' }), 404, 'NOT_FOUND');
  });
});

describe('content type', () => {
  it('a form-encoded body (curl -d without -H) on a JSON route: 415 saying to send application/json', async () => {
    const res = await t.app.inject({
      method: 'POST',
      url: '/contacts',
      headers: { ...secret(), 'content-type': 'application/x-www-form-urlencoded' },
      payload: 'email=a@example.com',
    });
    const error = expectEnvelope(res, 415, 'UNSUPPORTED_MEDIA_TYPE');
    expect(error.message).toBe(
      'Content-Type `application/x-www-form-urlencoded` is not accepted here: send the body as JSON with `Content-Type: application/json`',
    );
  });

  it('a body without any content type: 415 naming the header', async () => {
    const res = await t.app.inject({ method: 'POST', url: '/contacts', headers: secret(), payload: Buffer.from('{"email":"a@example.com"}') });
    expect(expectEnvelope(res, 415, 'UNSUPPORTED_MEDIA_TYPE').message).toMatch(/^The request has a body but no Content-Type: send .*`Content-Type: application\/json`/);
  });

  it('the CSV upload names multipart/form-data instead', async () => {
    const res = await t.app.inject({ method: 'POST', url: '/contacts/import', headers: { ...secret(), 'content-type': 'text/csv' }, payload: 'email\na@example.com' });
    expect(expectEnvelope(res, 415, 'UNSUPPORTED_MEDIA_TYPE').message).toMatch(/`Content-Type: multipart\/form-data`/);
  });

  it('no body at all on a JSON route: a whole-body error on `(body)`, saying how to send one', async () => {
    const res = await t.app.inject({ method: 'POST', url: '/contacts', headers: secret() });
    expect(expectEnvelope(res, 422, 'VALIDATION_ERROR').errors).toEqual([
      { field: '(body)', code: 'invalid_type', message: 'Request body is missing: send a JSON object with `Content-Type: application/json`' },
    ]);
  });
});

describe('whole-body errors are on `(body)`, never on a field of that name', () => {
  it('an array body on /v1/send (which has a `body` field)', async () => {
    const res = await t.app.inject({ method: 'POST', url: '/v1/send', headers: { ...secret(), 'content-type': 'application/json' }, payload: '[1]' });
    const errors = expectEnvelope(res, 422, 'VALIDATION_ERROR').errors;
    expect(errors).toEqual([expect.objectContaining({ field: '(body)', code: 'invalid_type' })]);
  });
});
