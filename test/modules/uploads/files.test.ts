import { readFile, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { newProject, type TestProject } from '../../helpers/accounts.js';
import { expectEnvelope } from '../../helpers/envelope.js';
import { createUploadTestApp, jpeg, localPath, png, upload, type UploadAnswer, type UploadTestApp } from './helpers.js';

/** GET and HEAD /files/:key: public, immutable, nosniff, ETag (docs/uploads.md "Serving"). */

let t: UploadTestApp;
let project: TestProject;
let image: UploadAnswer;
beforeAll(async () => {
  t = await createUploadTestApp();
  project = (await newProject(t.app)).project;
  image = await upload(t.app, project, await png(30, 20), { filename: 'logo.png' });
});
afterAll(() => t?.close());

describe('GET /files/:key', () => {
  it('serves the stored bytes without authentication, with the type, length, ETag and immutable caching; nosniff', async () => {
    const res = await t.app.inject({ method: 'GET', url: `/files/${image.key}` });
    expect(res.statusCode).toBe(200);
    expect(res.rawPayload).toEqual(await readFile(localPath(t.dataDir, image.key)));
    expect(res.headers).toMatchObject({
      'content-type': 'image/png',
      'content-length': String(image.size),
      'cache-control': 'public, max-age=31536000, immutable',
      'x-content-type-options': 'nosniff',
      etag: `"${image.key}"`,
      'content-security-policy': "default-src 'none'; style-src 'unsafe-inline'; sandbox",
    });
    expect(res.headers['set-cookie']).toBeUndefined();
  });

  it('the `url` of the answer is PUBLIC_URL/files/<key>', () => {
    expect(image.url).toBe(`https://mail.example.test/files/${image.key}`);
  });

  it('serves a JPEG as image/jpeg', async () => {
    const jpg = await upload(t.app, project, await jpeg());
    const res = await t.app.inject({ method: 'GET', url: `/files/${jpg.key}` });
    expect(res.headers['content-type']).toBe('image/jpeg');
  });

  it('answers 304 Not Modified (no body) to a matching If-None-Match, weak or strong, or *', async () => {
    for (const tag of [`"${image.key}"`, `W/"${image.key}"`, `"other", "${image.key}"`, '*']) {
      const res = await t.app.inject({ method: 'GET', url: `/files/${image.key}`, headers: { 'if-none-match': tag } });
      expect(res.statusCode, tag).toBe(304);
      expect(res.rawPayload.length).toBe(0);
      expect(res.headers).toMatchObject({ etag: `"${image.key}"`, 'cache-control': 'public, max-age=31536000, immutable' });
    }
    const other = await t.app.inject({ method: 'GET', url: `/files/${image.key}`, headers: { 'if-none-match': '"something-else"' } });
    expect(other.statusCode).toBe(200);
  });

  it('answers 404 in the envelope for an unknown key', async () => {
    const unknown = image.key.replace(/^.{8}/, '00000000');
    expectEnvelope(await t.app.inject({ method: 'GET', url: `/files/${unknown}` }), 404, 'NOT_FOUND');
    expectEnvelope(await t.app.inject({ method: 'GET', url: `/files/${unknown}`, headers: { 'if-none-match': '*' } }), 404, 'NOT_FOUND');
  });

  it('never reaches outside the storage: traversal, other extensions, upper case and other shapes are 404', async () => {
    // A file beside the storage folder that a traversal would reach.
    await writeFile(path.join(t.dataDir, 'secret.png'), 'top secret');
    const attempts = [
      '/files/..%2Fsecret.png',
      '/files/..%2F..%2Fsecret.png',
      '/files/%2E%2E%2Fsecret.png',
      '/files/..%5Csecret.png',
      `/files/${image.key.slice(34, 36)}%2F${image.key}`,
      `/files/${image.key.toUpperCase()}`,
      `/files/${image.key.replace('.png', '.svg')}`,
      `/files/${image.key.replace('.png', '.html')}`,
      `/files/${image.key}%00.png`,
      `/files/${image.key}.png`,
      '/files/.tmp',
      '/files/secret.png',
    ];
    for (const url of attempts) {
      const res = await t.app.inject({ method: 'GET', url });
      // A NUL in a path is refused by the text rules (422) before any route runs.
      expect(res.statusCode, url).toBe(url.includes('%00') ? 422 : 404);
      expect(res.body).not.toContain('top secret');
    }
    const outside = await t.app.inject({ method: 'GET', url: '/files/../secret.png' });
    expect(outside.statusCode).toBe(404);
  });
});

describe('HEAD /files/:key', () => {
  it('answers the same headers as GET, without a body', async () => {
    const res = await t.app.inject({ method: 'HEAD', url: `/files/${image.key}` });
    expect(res.statusCode).toBe(200);
    expect(res.rawPayload.length).toBe(0);
    expect(res.headers).toMatchObject({
      'content-type': 'image/png',
      'content-length': String(image.size),
      'cache-control': 'public, max-age=31536000, immutable',
      'x-content-type-options': 'nosniff',
      etag: `"${image.key}"`,
    });
  });

  it('answers 404 for an unknown or malformed key, and 304 to a matching If-None-Match', async () => {
    expect((await t.app.inject({ method: 'HEAD', url: `/files/${image.key.replace(/^.{8}/, '00000000')}` })).statusCode).toBe(404);
    expect((await t.app.inject({ method: 'HEAD', url: '/files/..%2Fsecret.png' })).statusCode).toBe(404);
    expect((await t.app.inject({ method: 'HEAD', url: `/files/${image.key}`, headers: { 'if-none-match': `"${image.key}"` } })).statusCode).toBe(304);
  });
});
