import { Readable } from 'node:stream';
import type { S3Config } from '../../config.js';
import { assertStorageKey, type DeleteFailure, IMMUTABLE_CACHE, type UploadStorage } from './storage.js';

/** DeleteObjects takes at most 1,000 keys. */
const DELETE_BATCH = 1000;

type S3Sdk = typeof import('@aws-sdk/client-s3');

const isNotFound = (sdk: S3Sdk, err: unknown) =>
  err instanceof sdk.S3ServiceException && (err.name === 'NoSuchKey' || err.name === 'NotFound' || err.$metadata.httpStatusCode === 404);

/**
 * An S3-compatible bucket through the official AWS SDK (v3). Objects are written whole by
 * PutObject (never visible half-written) with their Content-Type and the immutable
 * Cache-Control, so a CDN or the bucket's own public URL would serve them right too; the
 * service itself streams them through GET /files/:key, which adds `X-Content-Type-Options`.
 *
 * Checksums only where an operation requires them (`WHEN_REQUIRED`): the SDK's newer default
 * adds CRC headers that several S3-compatible servers (older MinIO, Ceph, R2 at times) refuse.
 *
 * The SDK (~5 MB of heap) is loaded at the first operation, not at start: a server that keeps
 * its uploads on disk never loads it (docs/performance.md "Memory").
 */
export function createS3Storage(config: S3Config): UploadStorage {
  let loaded: Promise<{ sdk: S3Sdk; client: InstanceType<S3Sdk['S3Client']> }> | undefined;
  const connect = () => (loaded ??= import('@aws-sdk/client-s3').then((sdk) => ({ sdk, client: newClient(sdk, config) })));
  const Bucket = config.bucket;

  return {
    kind: 's3',

    async put(key, data, contentType) {
      assertStorageKey(key);
      const { sdk, client } = await connect();
      await client.send(
        new sdk.PutObjectCommand({ Bucket, Key: key, Body: data, ContentLength: data.length, ContentType: contentType, CacheControl: IMMUTABLE_CACHE }),
      );
    },

    async head(key) {
      assertStorageKey(key);
      const { sdk, client } = await connect();
      try {
        const res = await client.send(new sdk.HeadObjectCommand({ Bucket, Key: key }));
        return { size: res.ContentLength ?? 0 };
      } catch (err) {
        if (isNotFound(sdk, err)) return undefined;
        throw err;
      }
    },

    async get(key) {
      assertStorageKey(key);
      const { sdk, client } = await connect();
      try {
        const res = await client.send(new sdk.GetObjectCommand({ Bucket, Key: key }));
        if (!(res.Body instanceof Readable)) throw new Error('S3 GetObject answered without a readable body');
        return { size: res.ContentLength ?? 0, body: res.Body };
      } catch (err) {
        if (isNotFound(sdk, err)) return undefined;
        throw err;
      }
    },

    async deleteMany(keys) {
      const failures: DeleteFailure[] = [];
      for (let at = 0; at < keys.length; at += DELETE_BATCH) {
        const batch = keys.slice(at, at + DELETE_BATCH);
        for (const key of batch) assertStorageKey(key);
        const { sdk, client } = await connect();
        // S3 answers a missing key as deleted; errors come per key.
        const res = await client.send(new sdk.DeleteObjectsCommand({ Bucket, Delete: { Objects: batch.map((Key) => ({ Key })), Quiet: true } }));
        for (const e of res.Errors ?? []) failures.push({ key: e.Key ?? '', error: `${e.Code ?? 'error'}: ${e.Message ?? ''}` });
      }
      return failures;
    },

    // PutObject is atomic: nothing is left behind by an interrupted write.
    async sweep() {
      return 0;
    },
  };
}

function newClient(sdk: S3Sdk, config: S3Config) {
  return new sdk.S3Client({
    region: config.region,
    ...(config.endpoint && { endpoint: config.endpoint }),
    // A copy: the SDK marks the credentials object it is given (the configuration's is frozen).
    ...(config.credentials && { credentials: { ...config.credentials } }),
    forcePathStyle: config.forcePathStyle,
    requestChecksumCalculation: 'WHEN_REQUIRED',
    responseChecksumValidation: 'WHEN_REQUIRED',
    maxAttempts: 3,
    requestHandler: { connectionTimeout: 5_000, requestTimeout: 30_000 },
  });
}
