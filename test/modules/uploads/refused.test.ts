import { randomBytes } from 'node:crypto';
import { readdir } from 'node:fs/promises';
import path from 'node:path';
import sharp from 'sharp';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { bearer, newProject, type TestProject } from '../../helpers/accounts.js';
import { expectEnvelope } from '../../helpers/envelope.js';
import { floodUpload } from '../../helpers/raw-http.js';
import { createUploadTestApp, jpeg, multipart, noise, png, postImage, type UploadTestApp } from './helpers.js';

/**
 * What POST /uploads/image refuses (docs/uploads.md "Formats", "Limits"): everything but JPEG,
 * PNG, GIF and WebP — whatever its name or declared type —, damaged files, decompression bombs,
 * files over 10 MB. Each refusal is a 4xx envelope and stores nothing (no row, no object).
 */

let t: UploadTestApp;
let project: TestProject;
beforeAll(async () => {
  t = await createUploadTestApp();
  project = (await newProject(t.app)).project;
});
afterAll(() => t?.close());

/** Every file under DATA_DIR/uploads except the temp folder (nothing may be left by a refusal). */
async function storedFiles(): Promise<string[]> {
  const root = path.join(t.dataDir, 'uploads');
  try {
    const entries = await readdir(root, { recursive: true, withFileTypes: true });
    return entries.filter((e) => e.isFile()).map((e) => path.join(e.parentPath, e.name));
  } catch {
    return [];
  }
}

/** The stored files and the project's rows now: a refusal must leave both as they were. */
async function snapshot(): Promise<{ files: string[]; rows: number }> {
  const rows = await t.db.db.selectFrom('uploads').select('id').where('project_id', '=', project.id).execute();
  return { files: await storedFiles(), rows: rows.length };
}

async function expectNothingStored(before: { files: string[]; rows: number }): Promise<void> {
  expect(await snapshot()).toEqual(before);
}

/** The 422 of a refused file: VALIDATION_ERROR with one `image` field error whose message matches. */
async function expectRefused(bytes: Buffer, message: RegExp, opts: Parameters<typeof multipart>[1] = {}): Promise<void> {
  const before = await snapshot();
  const res = await postImage(t.app, project, bytes, opts);
  const error = expectEnvelope(res, 422, 'VALIDATION_ERROR');
  expect(error.errors).toHaveLength(1);
  expect(error.errors[0]).toMatchObject({ field: opts.field ?? 'image', code: 'invalid_type' });
  expect(error.errors[0].message).toMatch(message);
  await expectNothingStored(before);
}

const SVG = '<?xml version="1.0"?>\n<svg xmlns="http://www.w3.org/2000/svg" width="10" height="10"><script>alert(1)</script><rect width="10" height="10"/></svg>';

describe('refused with 422 VALIDATION_ERROR, nothing stored', () => {
  it('an SVG named logo.png and declared image/png', async () => {
    await expectRefused(Buffer.from(SVG), /SVG/, { filename: 'logo.png', contentType: 'image/png' });
  });

  it('an SVG without the XML declaration, with a byte order mark', async () => {
    await expectRefused(Buffer.from(`\uFEFF<svg xmlns="http://www.w3.org/2000/svg"></svg>`), /SVG/, { filename: 'a.svg', contentType: 'image/svg+xml' });
  });

  it('an HTML page named photo.png', async () => {
    await expectRefused(Buffer.from('<!DOCTYPE html><html><body><script>alert(1)</script></body></html>'), /HTML/, { filename: 'photo.png', contentType: 'image/png' });
  });

  it('plain text', async () => {
    await expectRefused(Buffer.from('just some words, not an image\n'), /text/, { filename: 'notes.jpg' });
  });

  it('a truncated PNG', async () => {
    const whole = await noise(200, 200).png().toBuffer();
    await expectRefused(whole.subarray(0, Math.floor(whole.length / 2)), /not a valid PNG/, { filename: 'cut.png' });
  });

  it('a truncated JPEG', async () => {
    const whole = await noise(200, 200).jpeg().toBuffer();
    await expectRefused(whole.subarray(0, Math.floor(whole.length / 2)), /not a valid JPEG/);
  });

  it('the PNG signature followed by junk', async () => {
    const bytes = Buffer.concat([(await png()).subarray(0, 8), randomBytes(4096)]);
    await expectRefused(bytes, /PNG/);
  });

  it('the GIF and WebP signatures followed by junk', async () => {
    await expectRefused(Buffer.concat([Buffer.from('GIF89a'), randomBytes(2048)]), /GIF/);
    await expectRefused(Buffer.concat([Buffer.from('RIFF'), Buffer.from([0, 8, 0, 0]), Buffer.from('WEBP'), randomBytes(2048)]), /WebP/);
  });

  it('TIFF, AVIF, HEIC, BMP and PDF, named by what they are', async () => {
    await expectRefused(await noise(16, 16).tiff().toBuffer(), /TIFF/, { filename: 'a.png' });
    await expectRefused(await noise(16, 16).avif().toBuffer(), /AVIF/, { filename: 'a.jpg' });
    const heic = Buffer.concat([Buffer.from([0, 0, 0, 0x18]), Buffer.from('ftypheic'), Buffer.alloc(64)]);
    await expectRefused(heic, /HEIC/, { filename: 'IMG_0001.HEIC' });
    await expectRefused(Buffer.concat([Buffer.from('BM'), randomBytes(100)]), /BMP/);
    await expectRefused(Buffer.from('%PDF-1.7\n%âãÏÓ\n'), /PDF/);
  });

  it('an empty file', async () => {
    await expectRefused(Buffer.alloc(0), /empty/);
  });

  it('a decompression bomb: a 7,072 × 7,072 PNG of 0.2 MB (50,013,184 pixels, just over the limit) is refused before decoding', async () => {
    const bomb = await sharp({ create: { width: 7072, height: 7072, channels: 3, background: '#000' } }).png({ compressionLevel: 9 }).toBuffer();
    expect(bomb.length).toBeLessThan(1024 * 1024);
    await expectRefused(bomb, /too large: more than 50,000,000 pixels/);
  });

  it('the image in a field named neither "image" nor "file"', async () => {
    const before = await snapshot();
    const res = await postImage(t.app, project, await png(), { field: 'picture' });
    expect(expectEnvelope(res, 422, 'VALIDATION_ERROR').errors[0].message).toMatch(/field "image" \(or "file"\), got a file in "picture"/);
    await expectNothingStored(before);
  });

  it('a multipart body without a file, and a body that is not multipart', async () => {
    const before = await snapshot();
    const boundary = 'xyz';
    const noFile = await t.app.inject({
      method: 'POST',
      url: '/uploads/image',
      headers: { ...bearer(project.secret), 'content-type': `multipart/form-data; boundary=${boundary}` },
      payload: `--${boundary}\r\nContent-Disposition: form-data; name="image"\r\n\r\nnot a file\r\n--${boundary}--\r\n`,
    });
    expect(expectEnvelope(noFile, 422, 'VALIDATION_ERROR').errors[0].message).toMatch(/Required: an image file/);
    const json = await t.app.inject({ method: 'POST', url: '/uploads/image', headers: bearer(project.secret), payload: { image: 'x' } });
    expect(expectEnvelope(json, 422, 'VALIDATION_ERROR').errors[0].message).toMatch(/multipart\/form-data/);
    await expectNothingStored(before);
  });
});

describe('10 MB limit', () => {
  const LIMIT = 10 * 1024 * 1024;

  /** A valid PNG padded with trailing bytes (ignored by decoders) to exactly `size` bytes. */
  async function pngOfSize(size: number): Promise<Buffer> {
    const image = await noise(400, 400).png().toBuffer();
    return Buffer.concat([image, Buffer.alloc(size - image.length)]);
  }

  it('accepts a file of exactly 10 MB (stored without its trailing padding)', async () => {
    const res = await postImage(t.app, project, await pngOfSize(LIMIT));
    expect(res.statusCode, res.body).toBe(201);
    expect(res.json().size).toBeLessThan(LIMIT / 2);
    await t.app.inject({ method: 'DELETE', url: `/uploads/${res.json().id}`, headers: bearer(project.secret) });
  });

  it('refuses 10 MB + 1 byte with 413 PAYLOAD_TOO_LARGE (the connection is closed), nothing stored', async () => {
    await t.db.db.deleteFrom('uploads').where('project_id', '=', project.id).execute();
    const before = await storedFiles();
    const res = await postImage(t.app, project, await pngOfSize(LIMIT + 1));
    const error = expectEnvelope(res, 413, 'PAYLOAD_TOO_LARGE');
    expect(error.message).toBe('The image is larger than 10 MB');
    expect(res.headers.connection).toBe('close');
    expect(await storedFiles()).toEqual(before);
  });

  it('refuses a declared Content-Length far over the limit before reading the body', async () => {
    const res = await t.app.inject({
      method: 'POST',
      url: '/uploads/image',
      headers: { ...bearer(project.secret), 'content-type': 'multipart/form-data; boundary=x', 'content-length': String(50 * 1024 * 1024) },
      payload: Buffer.alloc(10),
    });
    expectEnvelope(res, 413, 'PAYLOAD_TOO_LARGE');
  });

  it('cuts a chunked upload (no Content-Length) off at the limit: 413 while the client is still sending, the connection closed', async () => {
    const before = await storedFiles();
    await t.app.listen({ port: 0, host: '127.0.0.1' });
    const address = t.app.server.address();
    const port = typeof address === 'object' && address ? address.port : 0;
    const result = await floodUpload(port, project.secret, 200 * 1024 * 1024);
    expect(result.status).toBe(413);
    expect(result.connectionClose).toBe(true);
    // The server read ~10 MB; loopback socket buffers hold a few MB more.
    expect(result.sent).toBeLessThan(40 * 1024 * 1024);
    expect(await storedFiles()).toEqual(before);
  });

  it('a small JPEG still passes after the refusals', async () => {
    const res = await postImage(t.app, project, await jpeg());
    expect(res.statusCode, res.body).toBe(201);
  });
});
