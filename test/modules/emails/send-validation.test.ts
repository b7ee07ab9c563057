import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { bearer, newProject, type TestProject } from '../../helpers/accounts.js';
import { expectEnvelope } from '../../helpers/envelope.js';
import { addVerifiedDomain, createSendTestApp, jobsOf, newSender, send, type SendAnswer, type SendTestApp } from './helpers.js';

let t: SendTestApp;
let project: TestProject;
let from: string;
beforeAll(async () => {
  t = await createSendTestApp();
  ({ project, from } = await newSender(t));
});
afterAll(() => t?.close());

const png = Buffer.from('89504e470d0a1a0a', 'hex').toString('base64');
const attachment = (i = 0, content = png) => ({ filename: `f${i}.png`, content, contentType: 'image/png' });
const valid = () => ({ to: 'v@example.com', from, subject: 'Subject', body: '<p>Body</p>' });

const countContacts = async (projectId: string) =>
  (await t.db.db.selectFrom('contacts').select((eb) => eb.fn.countAll<number>().as('n')).where('project_id', '=', projectId).executeTakeFirstOrThrow()).n;

describe('POST /v1/send validation (422 VALIDATION_ERROR with field paths)', () => {
  const cases: [string, () => object, string, string][] = [
    ['subject with a newline', () => ({ ...valid(), subject: 'Hello\r\nBcc: x@evil.example' }), 'subject', 'invalid_string'],
    ['subject of 999 characters', () => ({ ...valid(), subject: 'x'.repeat(999) }), 'subject', 'too_big'],
    ['empty subject', () => ({ ...valid(), subject: '' }), 'subject', 'too_small'],
    ['empty body', () => ({ ...valid(), body: '' }), 'body', 'too_small'],
    ['no subject and no template', () => ({ to: 'v@example.com', from, body: 'b' }), 'subject', 'invalid_type'],
    ['no body and no template', () => ({ to: 'v@example.com', from, subject: 's' }), 'body', 'invalid_type'],
    ['no from and no template', () => ({ to: 'v@example.com', subject: 's', body: 'b' }), 'from', 'invalid_type'],
    ['no to', () => ({ from, subject: 's', body: 'b' }), 'to', 'invalid_type'],
    ['a malformed to', () => ({ ...valid(), to: 'not-an-email' }), 'to', 'invalid_string'],
    ['a malformed second recipient', () => ({ ...valid(), to: ['a@example.com', { email: 'nope' }] }), 'to.1.email', 'invalid_string'],
    ['a malformed second recipient string', () => ({ ...valid(), to: ['a@example.com', 'nope'] }), 'to.1', 'invalid_string'],
    ['an empty recipient list', () => ({ ...valid(), to: [] }), 'to', 'too_small'],
    ['51 recipients', () => ({ ...valid(), to: Array.from({ length: 51 }, (_, i) => `r${i}@example.com`) }), 'to', 'too_big'],
    ['a malformed from', () => ({ ...valid(), from: 'nobody' }), 'from', 'invalid_string'],
    ['a malformed reply', () => ({ ...valid(), reply: 'nobody' }), 'reply', 'invalid_string'],
    ['a template id that is not a uuid', () => ({ ...valid(), template: 'welcome' }), 'template', 'invalid_string'],
    ['a header name with CR/LF', () => ({ ...valid(), headers: { 'X-A\r\nBcc': 'x' } }), 'headers.X-A\r\nBcc', 'invalid_string'],
    ['a header name with a colon', () => ({ ...valid(), headers: { 'X-A:B': 'x' } }), 'headers.X-A:B', 'invalid_string'],
    ['a header name with a space', () => ({ ...valid(), headers: { 'X A': 'x' } }), 'headers.X A', 'invalid_string'],
    ['a header value with a newline', () => ({ ...valid(), headers: { 'X-Tag': 'a\nBcc: x@evil.example' } }), 'headers.X-Tag', 'invalid_string'],
    ['a header value of 999 characters', () => ({ ...valid(), headers: { 'X-Tag': 'x'.repeat(999) } }), 'headers.X-Tag', 'too_big'],
    ['a From header', () => ({ ...valid(), headers: { from: 'x@evil.example' } }), 'headers.from', 'reserved_header'],
    ['a DKIM-Signature header', () => ({ ...valid(), headers: { 'DKIM-Signature': 'v=1' } }), 'headers.DKIM-Signature', 'reserved_header'],
    ['a List-Unsubscribe header', () => ({ ...valid(), headers: { 'List-Unsubscribe': '<x>' } }), 'headers.List-Unsubscribe', 'reserved_header'],
    ['a Message-ID header', () => ({ ...valid(), headers: { 'Message-ID': '<x@y>' } }), 'headers.Message-ID', 'reserved_header'],
    ['a Resent-From header', () => ({ ...valid(), headers: { 'Resent-From': 'x@evil.example' } }), 'headers.Resent-From', 'forbidden_header'],
    ['a RESENT-TO header (any case, any Resent-*)', () => ({ ...valid(), headers: { 'RESENT-TO': 'x@evil.example' } }), 'headers.RESENT-TO', 'forbidden_header'],
    ['an Errors-To header', () => ({ ...valid(), headers: { 'errors-to': 'x@evil.example' } }), 'headers.errors-to', 'forbidden_header'],
    ['a Disposition-Notification-To header', () => ({ ...valid(), headers: { 'Disposition-Notification-To': 'x@evil.example' } }), 'headers.Disposition-Notification-To', 'forbidden_header'],
    ['a header value with a NUL', () => ({ ...valid(), headers: { 'X-Tag': 'a\u0000b' } }), 'headers.X-Tag', 'invalid_string'],
    ['a header value with an escape character', () => ({ ...valid(), headers: { 'X-Tag': 'a\u001b[31mb' } }), 'headers.X-Tag', 'invalid_string'],
    ['a header value with DEL', () => ({ ...valid(), headers: { 'X-Tag': 'a\u007fb' } }), 'headers.X-Tag', 'invalid_string'],
    ['a header value with a C1 control (NEL)', () => ({ ...valid(), headers: { 'X-Tag': 'a\u0085b' } }), 'headers.X-Tag', 'invalid_string'],
    ['a header name with a control character', () => ({ ...valid(), headers: { 'X-\u0001A': 'x' } }), 'headers.X-\u0001A', 'invalid_string'],
    ['a filename that is only folders', () => ({ ...valid(), attachments: [{ ...attachment(), filename: '../../' }] }), 'attachments.0.filename', 'invalid_string'],
    ['a filename ending in ..', () => ({ ...valid(), attachments: [{ ...attachment(), filename: 'a\\..' }] }), 'attachments.0.filename', 'invalid_string'],
    ['11 attachments', () => ({ ...valid(), attachments: Array.from({ length: 11 }, (_, i) => attachment(i)) }), 'attachments', 'too_big'],
    ['attachments over 10 MB', () => ({ ...valid(), attachments: [attachment(0, Buffer.alloc(6 * 1024 * 1024, 1).toString('base64')), attachment(1, Buffer.alloc(4 * 1024 * 1024 + 1, 1).toString('base64'))] }), 'attachments', 'too_big'],
    ['invalid base64', () => ({ ...valid(), attachments: [attachment(0, 'not base64!')] }), 'attachments.0.content', 'invalid_string'],
    ['base64 of a wrong length', () => ({ ...valid(), attachments: [attachment(0, 'abc')] }), 'attachments.0.content', 'invalid_string'],
    ['an attachment without a filename', () => ({ ...valid(), attachments: [{ content: png, contentType: 'image/png' }] }), 'attachments.0.filename', 'invalid_type'],
    ['a malformed content type', () => ({ ...valid(), attachments: [{ ...attachment(), contentType: 'png' }] }), 'attachments.0.contentType', 'invalid_string'],
    ['a data value of the wrong type', () => ({ ...valid(), data: { list: [1, 2] } }), 'data.list', 'invalid_union'],
  ];

  it.each(cases)('refuses %s', async (_name, payload, field, code) => {
    const before = await countContacts(project.id);
    const res = await send(t.app, project, payload());
    const error = expectEnvelope(res, 422, 'VALIDATION_ERROR');
    expect(error.message).toBe('Request validation failed');
    expect(error.errors).toEqual(expect.arrayContaining([expect.objectContaining({ field, code })]));
    expect(await countContacts(project.id)).toBe(before);
  });

  it('stores attachment filenames without their folders (either separator), and accepts a tab in a header value', async () => {
    const names = ['../../etc/passwd', 'C:\\Users\\ada\\invoice.pdf', '/abs/dir/../x.png', 'mixed\\a/b\\c.txt', 'plain name.txt'];
    const res = await send(t.app, project, {
      ...valid(),
      headers: { 'X-Folded': 'a\tb' },
      attachments: names.map((filename, i) => ({ ...attachment(i), filename })),
    });
    expect(res.statusCode, res.body).toBe(200);
    const id = res.json<SendAnswer>().data.emails[0]?.email ?? '';
    const email = await t.db.db.selectFrom('emails').select(['attachment_set_id', 'headers']).where('id', '=', id).executeTakeFirstOrThrow();
    const set = await t.db.db.selectFrom('attachment_sets').select('items').where('id', '=', email.attachment_set_id ?? '').executeTakeFirstOrThrow();
    expect(set.items.map((a) => a.filename)).toEqual(['passwd', 'invoice.pdf', 'x.png', 'c.txt', 'plain name.txt']);
    expect(email.headers).toEqual({ 'X-Folded': 'a\tb' });
  });

  it('accepts exactly 10 attachments of 10 MB in total and a 998-character subject', async () => {
    const big = Buffer.alloc(1024 * 1024, 7).toString('base64');
    const res = await send(t.app, project, { ...valid(), subject: 'x'.repeat(998), attachments: Array.from({ length: 10 }, (_, i) => attachment(i, big)) });
    expect(res.statusCode, res.body.slice(0, 500)).toBe(200);
    const id = res.json<SendAnswer>().data.emails[0]?.email ?? '';
    const email = await t.db.db.selectFrom('emails').select('attachment_set_id').where('id', '=', id).executeTakeFirstOrThrow();
    const set = await t.db.db.selectFrom('attachment_sets').select('items').where('id', '=', email.attachment_set_id ?? '').executeTakeFirstOrThrow();
    expect(set.items).toHaveLength(10);
  });

  it('rolls everything back when the rendered emails are too large together: nothing is written', async () => {
    const before = await countContacts(project.id);
    const body = `<p>${'x'.repeat(1024 * 1024)}</p>`;
    const res = await send(t.app, project, { ...valid(), body, to: Array.from({ length: 41 }, (_, i) => `big${i}@example.com`) });
    expect(expectEnvelope(res, 422, 'VALIDATION_ERROR').errors).toEqual([expect.objectContaining({ field: 'body', code: 'too_big' })]);
    expect(await countContacts(project.id)).toBe(before);
  });

  it('keeps requests that share a transaction (group commit) independent: one failing request fails alone', async () => {
    const { project: p } = await newProject(t.app);
    const f = `a@${(await addVerifiedDomain(t, p.id)).domain}`;
    const big = `<p>${'x'.repeat(1024 * 1024)}</p>`;
    const results = await Promise.all([
      ...Array.from({ length: 8 }, (_, i) => send(t.app, p, { to: `ok${i}@example.com`, from: f, subject: 's', body: 'b' })),
      send(t.app, p, { to: Array.from({ length: 41 }, (_, i) => `big${i}@example.com`), from: f, subject: 's', body: big }),
    ]);
    expect(results.map((r) => r.statusCode)).toEqual([200, 200, 200, 200, 200, 200, 200, 200, 422]);
    const emails = await t.db.db.selectFrom('emails').select(['id', 'to_email']).where('project_id', '=', p.id).execute();
    expect(emails.map((e) => e.to_email).sort()).toEqual(Array.from({ length: 8 }, (_, i) => `ok${i}@example.com`));
    expect(await jobsOf(t.db, emails.map((e) => e.id))).toHaveLength(8);
    expect(await countContacts(p.id)).toBe(8);
  });
});

describe('POST /v1/send: authorisation and sender', () => {
  it('rejects a public key with 401 INVALID_API_KEY', async () => {
    const res = await t.app.inject({ method: 'POST', url: '/v1/send', headers: bearer(project.public), payload: valid() });
    expect(expectEnvelope(res, 401, 'INVALID_API_KEY').message).toMatch(/secret key/);
  });

  it('refuses a sender domain the project has not verified with 403 FORBIDDEN, writing nothing', async () => {
    const before = await countContacts(project.id);
    const res = await send(t.app, project, { ...valid(), from: 'someone@unverified.example' });
    expect(expectEnvelope(res, 403, 'FORBIDDEN').message).toMatch(/unverified\.example is not verified/);
    const other = await newProject(t.app);
    const foreign = await addVerifiedDomain(t, other.project.id);
    const res2 = await send(t.app, project, { ...valid(), from: `x@${foreign.domain}` });
    expectEnvelope(res2, 403, 'FORBIDDEN');
    expect(await countContacts(project.id)).toBe(before);
  });
});

describe('POST /v1/send with Idempotency-Key', () => {
  it('refuses a reused key with 409 and does not send again', async () => {
    const { project: p } = await newProject(t.app);
    const f = `a@${(await addVerifiedDomain(t, p.id)).domain}`;
    const payload = { to: 'i@example.com', from: f, subject: 's', body: 'b' };
    const first = await send(t.app, p, payload, { 'idempotency-key': 'order-1' });
    expect(first.statusCode, first.body).toBe(200);
    const again = await send(t.app, p, payload, { 'idempotency-key': 'order-1' });
    const error = expectEnvelope(again, 409, 'IDEMPOTENCY_KEY_REUSED');
    expect(error.details).toMatchObject({ key: 'order-1', originalRequest: { method: 'POST', path: '/v1/send' }, originalStatusCode: 200 });
    expect(await t.db.db.selectFrom('emails').select('id').where('project_id', '=', p.id).execute()).toHaveLength(1);
  });

  it('performs exactly one of ten racing requests with one key: one set of emails and jobs', async () => {
    const { project: p } = await newProject(t.app);
    const f = `a@${(await addVerifiedDomain(t, p.id)).domain}`;
    const payload = { to: ['r1@example.com', 'r2@example.com'], from: f, subject: 's', body: 'b' };
    const results = await Promise.all(Array.from({ length: 10 }, () => send(t.app, p, payload, { 'idempotency-key': 'race' })));
    expect(results.map((r) => r.statusCode).sort()).toEqual([200, 409, 409, 409, 409, 409, 409, 409, 409, 409]);
    const rows = await t.db.db.selectFrom('emails').select('id').where('project_id', '=', p.id).execute();
    expect(rows).toHaveLength(2);
    expect(await jobsOf(t.db, rows.map((r) => r.id))).toHaveLength(2);
  });

  it('frees the key after a 4xx answer', async () => {
    const { project: p } = await newProject(t.app);
    const f = `a@${(await addVerifiedDomain(t, p.id)).domain}`;
    expectEnvelope(await send(t.app, p, { to: 'k@example.com', from: 'x@unverified.example', subject: 's', body: 'b' }, { 'idempotency-key': 'k' }), 403, 'FORBIDDEN');
    expect((await send(t.app, p, { to: 'k@example.com', from: f, subject: 's', body: 'b' }, { 'idempotency-key': 'k' })).statusCode).toBe(200);
  });
});
