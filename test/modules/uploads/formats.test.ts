import { readFile } from 'node:fs/promises';
import sharp from 'sharp';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { newProject, type TestProject } from '../../helpers/accounts.js';
import {
  animation,
  createUploadTestApp,
  fetchFile,
  jpeg,
  jpegWithMetadata,
  localPath,
  METADATA_MARKERS,
  png,
  upload,
  type UploadTestApp,
  webp,
} from './helpers.js';

/** POST /uploads/image with each accepted format: the answer, the row, the stored bytes (docs/uploads.md "Formats"). */

let t: UploadTestApp;
let project: TestProject;
beforeAll(async () => {
  t = await createUploadTestApp();
  project = (await newProject(t.app)).project;
});
afterAll(() => t?.close());

const KEY = /^[0-9a-f]{8}-[0-9a-f]{4}-7[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}\.(jpg|png|gif|webp)$/;

describe('accepted formats', () => {
  it.each([
    ['JPEG', () => jpeg(64, 32), 'image/jpeg', 'jpg', 'jpeg'],
    ['PNG', () => png(64, 32), 'image/png', 'png', 'png'],
    ['WebP', () => webp(64, 32), 'image/webp', 'webp', 'webp'],
  ] as const)('%s: 201 with url, key, filename, contentType, size, width, height; row and file stored', async (_name, make, contentType, ext, format) => {
    const bytes = await make();
    const res = await upload(t.app, project, bytes, { filename: `photo.${ext}`, contentType: 'application/octet-stream' });
    expect(res).toMatchObject({ filename: `photo.${ext}`, contentType, width: 64, height: 32 });
    expect(res.key).toMatch(KEY);
    expect(res.key.endsWith(`.${ext}`)).toBe(true);
    expect(res.url).toBe(`https://mail.example.test/files/${res.key}`);
    expect(res.key.startsWith(res.id)).toBe(true);
    const stored = await readFile(localPath(t.dataDir, res.key));
    expect(res.size).toBe(stored.length);
    const meta = await sharp(stored).metadata();
    expect({ format: meta.format, width: meta.width, height: meta.height }).toEqual({ format, width: 64, height: 32 });
    const row = await t.db.db.selectFrom('uploads').selectAll().where('id', '=', res.id).executeTakeFirstOrThrow();
    expect(row).toMatchObject({ project_id: project.id, key: res.key, filename: `photo.${ext}`, content_type: contentType, size: stored.length, width: 64, height: 32 });
  });

  it('GIF: an animation stays animated (frames, delays, loop) and answers the frame size', async () => {
    const res = await upload(t.app, project, await animation('gif'), { filename: 'spinner.gif' });
    expect(res).toMatchObject({ contentType: 'image/gif', width: 10, height: 8 });
    const meta = await sharp(await fetchFile(t.app, res.key)).metadata();
    expect({ format: meta.format, pages: meta.pages, delay: meta.delay, loop: meta.loop, width: meta.width }).toEqual({
      format: 'gif',
      pages: 3,
      delay: [100, 200, 300],
      loop: 0,
      width: 10,
    });
  });

  it('WebP: an animation stays animated too', async () => {
    const res = await upload(t.app, project, await animation('webp'));
    expect(res).toMatchObject({ contentType: 'image/webp', width: 10, height: 8 });
    const meta = await sharp(await fetchFile(t.app, res.key)).metadata();
    expect({ pages: meta.pages, delay: meta.delay }).toEqual({ pages: 3, delay: [100, 200, 300] });
  });

  it('the type comes from the bytes: a PNG named photo.jpg declared image/jpeg is stored as PNG', async () => {
    const res = await upload(t.app, project, await png(), { filename: 'photo.jpg', contentType: 'image/jpeg' });
    expect(res).toMatchObject({ contentType: 'image/png', filename: 'photo.jpg' });
    expect(res.key.endsWith('.png')).toBe(true);
  });

  it('accepts the field name "file" as well as "image"', async () => {
    const res = await upload(t.app, project, await png(), { field: 'file', filename: 'logo.png' });
    expect(res).toMatchObject({ contentType: 'image/png', filename: 'logo.png' });
  });

  it('accepts text fields before the file', async () => {
    const res = await upload(t.app, project, await png(), { before: 'hello' });
    expect(res.contentType).toBe('image/png');
  });
});

describe('metadata', () => {
  it('removes EXIF (camera, GPS), XMP and the ICC profile from the stored file, after turning the pixels by the EXIF orientation', async () => {
    const original = await jpegWithMetadata();
    const before = await sharp(original).metadata();
    // The fixture really carries all of it.
    expect(before.orientation).toBe(6);
    expect(before.exif && before.xmp && before.icc).toBeTruthy();
    for (const marker of METADATA_MARKERS) expect(original.includes(marker), marker).toBe(true);

    const res = await upload(t.app, project, original, { filename: 'holiday.jpg' });
    // 40×20 turned by 90°.
    expect({ width: res.width, height: res.height }).toEqual({ width: 20, height: 40 });
    const served = await fetchFile(t.app, res.key);
    const meta = await sharp(served).metadata();
    expect({ exif: meta.exif, xmp: meta.xmp, icc: meta.icc, iptc: meta.iptc, orientation: meta.orientation, hasProfile: meta.hasProfile }).toEqual({
      exif: undefined,
      xmp: undefined,
      icc: undefined,
      iptc: undefined,
      orientation: undefined,
      hasProfile: false,
    });
    expect({ width: meta.width, height: meta.height }).toEqual({ width: 20, height: 40 });
    for (const marker of METADATA_MARKERS) expect(served.includes(marker), marker).toBe(false);
    expect(served.includes('Exif\0\0')).toBe(false);
  });

  it('removes PNG text chunks (comments)', async () => {
    const withText = await sharp({ create: { width: 8, height: 8, channels: 3, background: '#123456' } })
      .png()
      .withMetadata()
      .withExifMerge({ IFD0: { ImageDescription: 'png-comment-marker' } })
      .toBuffer();
    expect(withText.includes('png-comment-marker')).toBe(true);
    const res = await upload(t.app, project, withText);
    const served = await fetchFile(t.app, res.key);
    expect(served.includes('png-comment-marker')).toBe(false);
    const meta = await sharp(served).metadata();
    expect(meta.exif).toBeUndefined();
    expect(meta.comments).toBeUndefined();
  });

  it('keeps a palette PNG a palette PNG with exactly the same pixels', async () => {
    const w = 60;
    const h = 40;
    const raw = Buffer.alloc(w * h * 3);
    for (let i = 0; i < w * h; i++) raw.set([[255, 0, 0], [0, 255, 0], [0, 0, 255], [10, 20, 30]][(i * 7 + Math.floor(i / w)) % 4] ?? [0, 0, 0], i * 3);
    const palette = await sharp(raw, { raw: { width: w, height: h, channels: 3 } }).png({ palette: true, quality: 100, dither: 0 }).toBuffer();
    const res = await upload(t.app, project, palette);
    const served = await fetchFile(t.app, res.key);
    expect((await sharp(served).metadata()).isPalette).toBe(true);
    expect(await sharp(served).removeAlpha().raw().toBuffer()).toEqual(await sharp(palette).removeAlpha().raw().toBuffer());
    expect(served.length).toBeLessThanOrEqual(palette.length * 1.1);
  });

  it('drops bytes after the end of the image (a polyglot JPEG + HTML is stored as a plain JPEG)', async () => {
    const polyglot = Buffer.concat([await jpeg(), Buffer.from('<html><script>alert(document.cookie)</script></html>')]);
    const res = await upload(t.app, project, polyglot);
    const served = await fetchFile(t.app, res.key);
    expect(served.includes('<script>')).toBe(false);
  });
});

describe('filename', () => {
  it.each([
    ['../../etc/passwd.png', 'passwd.png'],
    ['C:\\Users\\me\\logo.png', 'logo.png'],
    ['a\u0000b\u001fc.png', 'abc.png'],
    ['', 'image.png'],
    [`${'x'.repeat(300)}.png`, `${'x'.repeat(251)}.png`],
  ])('%j is kept as %j (display only: never part of the key)', async (filename, kept) => {
    const res = await upload(t.app, project, await png(), { filename });
    expect(res.filename).toBe(kept);
    expect(res.key).toMatch(KEY);
  });
});
