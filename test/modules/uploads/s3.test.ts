import { readdir } from 'node:fs/promises';
import { GetObjectCommand, type S3Client } from '@aws-sdk/client-s3';
import sharp from 'sharp';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { bearer, newProject } from '../../helpers/accounts.js';
import { until } from '../../helpers/poll.js';
import { createUploadTestApp, fetchFile, jpegWithMetadata, METADATA_MARKERS, png, startTestS3, type TestS3, upload, type UploadTestApp } from './helpers.js';

/**
 * S3-compatible storage end to end (docs/uploads.md "Storage"): a real s3rver on loopback (a local
 * S3 implementation speaking the S3 REST API with signature checks), the official AWS SDK in the
 * app, a real worker for deletions. Nothing is written under DATA_DIR/uploads in this mode.
 */

const BUCKET = 'mail-images';
let s3: TestS3;
let t: UploadTestApp;
let client: S3Client;

beforeAll(async () => {
  s3 = await startTestS3(BUCKET);
  client = s3.client;
  t = await createUploadTestApp(s3.env);
  await t.runWorker();
});
afterAll(async () => {
  await t?.close();
  await s3?.close();
});

const objectExists = (key: string) => s3.objectExists(key);

describe('S3 storage', () => {
  it('/config reports s3 storage', async () => {
    const res = await t.app.inject({ method: 'GET', url: '/config' });
    expect(res.json().uploads).toMatchObject({ storage: 's3', maxFileBytes: 10 * 1024 * 1024 });
  });

  it('stores the processed image in the bucket with its type and the immutable Cache-Control; nothing on local disk', async () => {
    const { project } = await newProject(t.app);
    const image = await upload(t.app, project, await jpegWithMetadata());
    const object = await client.send(new GetObjectCommand({ Bucket: BUCKET, Key: image.key }));
    expect(object.ContentType).toBe('image/jpeg');
    expect(object.CacheControl).toBe('public, max-age=31536000, immutable');
    const bytes = Buffer.from(await object.Body?.transformToByteArray() ?? []);
    expect(bytes.length).toBe(image.size);
    expect((await sharp(bytes).metadata()).exif).toBeUndefined();
    for (const marker of METADATA_MARKERS) expect(bytes.includes(marker)).toBe(false);
    const local = await readdir(t.dataDir).catch(() => []);
    expect(local).not.toContain('uploads');
  });

  it('serves it through /files/:key (streamed from the bucket) with the same headers as local storage; HEAD and 404', async () => {
    const { project } = await newProject(t.app);
    const original = await png(48, 24);
    const image = await upload(t.app, project, original);
    const res = await t.app.inject({ method: 'GET', url: `/files/${image.key}` });
    expect(res.statusCode).toBe(200);
    expect(res.headers).toMatchObject({
      'content-type': 'image/png',
      'content-length': String(image.size),
      'cache-control': 'public, max-age=31536000, immutable',
      'x-content-type-options': 'nosniff',
      etag: `"${image.key}"`,
    });
    expect(await sharp(res.rawPayload).metadata()).toMatchObject({ format: 'png', width: 48, height: 24 });
    const head = await t.app.inject({ method: 'HEAD', url: `/files/${image.key}` });
    expect(head.statusCode).toBe(200);
    expect(head.headers['content-length']).toBe(String(image.size));
    expect(head.rawPayload.length).toBe(0);
    const missing = image.key.replace(/^.{8}/, '00000000');
    expect((await t.app.inject({ method: 'GET', url: `/files/${missing}` })).statusCode).toBe(404);
    expect((await t.app.inject({ method: 'HEAD', url: `/files/${missing}` })).statusCode).toBe(404);
  });

  it('deleting the project removes its objects from the bucket; another project\'s stay', async () => {
    const { user, project } = await newProject(t.app);
    const other = await newProject(t.app);
    const images = [await upload(t.app, project, await png()), await upload(t.app, project, await png(12, 12))];
    const kept = await upload(t.app, other.project, await png());
    for (const image of images) expect(await objectExists(image.key)).toBe(true);
    const res = await t.app.inject({
      method: 'DELETE',
      url: `/users/@me/projects/${project.id}`,
      headers: { cookie: user.cookie },
      payload: { confirm: project.name },
    });
    expect(res.statusCode, res.body).toBe(204);
    for (const image of images) await until(`${image.key} deleted from the bucket`, async () => !(await objectExists(image.key)));
    expect(await fetchFile(t.app, kept.key)).toBeDefined();
    expect(await objectExists(kept.key)).toBe(true);
  });

  it('DELETE /uploads/:id removes the object', async () => {
    const { project } = await newProject(t.app);
    const image = await upload(t.app, project, await png());
    expect((await t.app.inject({ method: 'DELETE', url: `/uploads/${image.id}`, headers: bearer(project.secret) })).statusCode).toBe(204);
    await until('object deleted', async () => !(await objectExists(image.key)));
    expect((await t.app.inject({ method: 'GET', url: `/files/${image.key}` })).statusCode).toBe(404);
  });
});
