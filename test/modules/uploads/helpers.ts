import { randomBytes, randomUUID } from 'node:crypto';
import { mkdtemp, rm, stat } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { HeadObjectCommand, S3Client } from '@aws-sdk/client-s3';
import type { FastifyInstance, LightMyRequestResponse } from 'fastify';
import S3rver from 's3rver';
import sharp from 'sharp';
import { expect } from 'vitest';
import { bearer, type TestProject } from '../../helpers/accounts.js';
import { createSendTestApp, type SendTestApp } from '../emails/helpers.js';

/**
 * Upload tests run on a database of their own (createSendTestApp): the `uploads-delete` job must
 * run with this file's storage, never be taken by another file's worker (which would drain the
 * queue against its own storage), and this file's worker must not run other files' jobs.
 * DATA_DIR is a fresh temp folder (local storage under DATA_DIR/uploads), removed at close.
 */
export interface UploadTestApp extends SendTestApp {
  dataDir: string;
}

export async function createUploadTestApp(env: Record<string, string> = {}): Promise<UploadTestApp> {
  const dataDir = await mkdtemp(path.join(tmpdir(), 'uploads-test-'));
  const t = await createSendTestApp({ env: { DATA_DIR: dataDir, PUBLIC_URL: 'https://mail.example.test', ...env } });
  return {
    ...t,
    dataDir,
    async close() {
      await t.close();
      await rm(dataDir, { recursive: true, force: true });
    },
  };
}

/** Where local storage keeps `key` (src/modules/uploads/local-storage.ts). */
export const localPath = (dataDir: string, key: string) => path.join(dataDir, 'uploads', key.slice(34, 36), key);

export async function fileExists(file: string): Promise<boolean> {
  try {
    return (await stat(file)).isFile();
  } catch {
    return false;
  }
}

/** A multipart/form-data body with one file part. */
export function multipart(
  bytes: Buffer,
  opts: { field?: string; filename?: string; contentType?: string; before?: string } = {},
): { payload: Buffer; headers: Record<string, string> } {
  const boundary = `----upload${randomUUID()}`;
  const payload = Buffer.concat([
    Buffer.from(opts.before ? `--${boundary}\r\nContent-Disposition: form-data; name="note"\r\n\r\n${opts.before}\r\n` : ''),
    Buffer.from(
      `--${boundary}\r\nContent-Disposition: form-data; name="${opts.field ?? 'image'}"; filename="${opts.filename ?? 'image.bin'}"\r\n` +
        `Content-Type: ${opts.contentType ?? 'application/octet-stream'}\r\n\r\n`,
    ),
    bytes,
    Buffer.from(`\r\n--${boundary}--\r\n`),
  ]);
  return { payload, headers: { 'content-type': `multipart/form-data; boundary=${boundary}` } };
}

export interface UploadAnswer {
  id: string;
  url: string;
  key: string;
  filename: string;
  contentType: string;
  size: number;
  width: number;
  height: number;
  createdAt: string;
}

const isProject = (auth: TestProject | Record<string, string>): auth is TestProject => 'secret' in auth && 'public' in auth && 'id' in auth;

/** POST /uploads/image with the project's secret key (or other headers). */
export function postImage(
  app: FastifyInstance,
  auth: TestProject | Record<string, string>,
  bytes: Buffer,
  opts: Parameters<typeof multipart>[1] = {},
): Promise<LightMyRequestResponse> {
  const { payload, headers } = multipart(bytes, opts);
  const authHeaders: Record<string, string> = isProject(auth) ? bearer(auth.secret) : auth;
  return app.inject({ method: 'POST', url: '/uploads/image', headers: { ...headers, ...authHeaders }, payload });
}

/** Uploads and expects 201; returns the answer. */
export async function upload(app: FastifyInstance, project: TestProject, bytes: Buffer, opts: Parameters<typeof multipart>[1] = {}): Promise<UploadAnswer> {
  const res = await postImage(app, project, bytes, opts);
  expect(res.statusCode, res.body).toBe(201);
  return res.json<UploadAnswer>();
}

/** GET /files/<key> bytes (expects 200). */
export async function fetchFile(app: FastifyInstance, key: string): Promise<Buffer> {
  const res = await app.inject({ method: 'GET', url: `/files/${key}` });
  expect(res.statusCode, res.body).toBe(200);
  return res.rawPayload;
}

// ---- Fixtures, made with sharp ----

const solid = (width: number, height: number, background: string) => sharp({ create: { width, height, channels: 3, background } });

/** Noise: incompressible, so its encoded size is close to width × height × 3. */
export const noise = (width: number, height: number) => sharp(randomBytes(width * height * 3), { raw: { width, height, channels: 3 } });

export const jpeg = (width = 64, height = 32) => solid(width, height, '#3366cc').jpeg().toBuffer();
export const png = (width = 64, height = 32) => solid(width, height, '#33cc66').png().toBuffer();
export const webp = (width = 64, height = 32) => solid(width, height, '#cc3366').webp().toBuffer();

/** Text markers written into the metadata of {@link jpegWithMetadata}; none may survive an upload. */
export const METADATA_MARKERS = ['SecretCamMaker', 'GPS-WGS84-MARKER', 'xmp-creator-marker', 'ImageDescMarker'];

/**
 * A 40×20 JPEG whose EXIF says "rotate 90°" (orientation 6) and carries a camera, a description
 * and a GPS block, plus an XMP packet and an ICC profile (Display P3 → sRGB is what sharp does).
 */
export async function jpegWithMetadata(): Promise<Buffer> {
  return solid(40, 20, '#ff0000')
    .jpeg()
    .withMetadata({ orientation: 6 })
    .withExifMerge({
      IFD0: { Make: METADATA_MARKERS[0] ?? '', ImageDescription: METADATA_MARKERS[3] ?? '' },
      IFD3: { GPSLatitudeRef: 'N', GPSLatitude: '51/1 30/1 0/1', GPSLongitudeRef: 'W', GPSLongitude: '0/1 7/1 0/1', GPSMapDatum: METADATA_MARKERS[1] ?? '' },
    })
    .withXmp(
      `<x:xmpmeta xmlns:x="adobe:ns:meta/"><rdf:RDF xmlns:rdf="http://www.w3.org/1999/02/22-rdf-syntax-ns#"><rdf:Description xmlns:dc="http://purl.org/dc/elements/1.1/" dc:creator="${METADATA_MARKERS[2] ?? ''}"/></rdf:RDF></x:xmpmeta>`,
    )
    .withIccProfile('p3')
    .toBuffer();
}

/** A 10×8 animation of three different frames (delays 100, 200, 300 ms, looping forever). */
export async function animation(format: 'gif' | 'webp'): Promise<Buffer> {
  const frame = (c: string) => sharp({ create: { width: 10, height: 8, channels: 4, background: c } }).png().toBuffer();
  const frames = await Promise.all(['#ff0000', '#00ff00', '#0000ff'].map(frame));
  const joined = sharp(frames, { join: { animated: true } });
  return (format === 'gif' ? joined.gif({ delay: [100, 200, 300], loop: 0 }) : joined.webp({ delay: [100, 200, 300], loop: 0 })).toBuffer();
}


/** A real S3-compatible server (s3rver) on loopback with one bucket, the app's S3_* variables for it, and an SDK client. */
export interface TestS3 {
  env: Record<string, string>;
  client: S3Client;
  objectExists(key: string): Promise<boolean>;
  close(): Promise<void>;
}

export async function startTestS3(bucket: string): Promise<TestS3> {
  const dir = await mkdtemp(path.join(tmpdir(), 's3rver-'));
  const server = new S3rver({ address: '127.0.0.1', port: 0, silent: true, directory: dir, configureBuckets: [{ name: bucket }] });
  const { port } = await server.run();
  const endpoint = `http://127.0.0.1:${port}`;
  const client = new S3Client({ region: 'us-east-1', endpoint, forcePathStyle: true, credentials: { accessKeyId: 'S3RVER', secretAccessKey: 'S3RVER' } });
  return {
    env: {
      S3_BUCKET: bucket,
      S3_ENDPOINT: endpoint,
      S3_REGION: 'us-east-1',
      S3_ACCESS_KEY_ID: 'S3RVER',
      S3_SECRET_ACCESS_KEY: 'S3RVER',
      S3_FORCE_PATH_STYLE: 'true',
    },
    client,
    async objectExists(key) {
      try {
        await client.send(new HeadObjectCommand({ Bucket: bucket, Key: key }));
        return true;
      } catch {
        return false;
      }
    },
    async close() {
      client.destroy();
      await server.close();
      await rm(dir, { recursive: true, force: true });
    },
  };
}
