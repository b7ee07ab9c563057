import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { ConfigError, loadConfig } from '../../../src/config.js';

/** UPLOAD_QUOTA_MB and the S3_* variables (docs/uploads.md "Configuration summary"). */

const base = { DATA_DIR: '/tmp/uploads-config-test', SECRET: 's'.repeat(32) };
const S3 = { S3_BUCKET: 'images', S3_ACCESS_KEY_ID: 'AKIA', S3_SECRET_ACCESS_KEY: 'secret' };

describe('uploads configuration', () => {
  it('defaults: local storage under DATA_DIR/uploads, 1024 MB per project', () => {
    expect(loadConfig(base).uploads).toEqual({ quotaBytes: 1024 * 1024 * 1024, localDir: path.resolve('/tmp/uploads-config-test/uploads'), s3: undefined });
  });

  it('UPLOAD_QUOTA_MB in MB (1,048,576 bytes), decimals allowed; anything else names the variable', () => {
    expect(loadConfig({ ...base, UPLOAD_QUOTA_MB: '50' }).uploads.quotaBytes).toBe(50 * 1024 * 1024);
    expect(loadConfig({ ...base, UPLOAD_QUOTA_MB: '0.5' }).uploads.quotaBytes).toBe(512 * 1024);
    for (const bad of ['0', '-1', 'lots', '1e3']) expect(() => loadConfig({ ...base, UPLOAD_QUOTA_MB: bad }), bad).toThrow(/UPLOAD_QUOTA_MB/);
  });

  it('S3_BUCKET turns S3 on: region us-east-1 by default, path style off, the key pair as credentials', () => {
    expect(loadConfig({ ...base, ...S3 }).uploads.s3).toEqual({
      bucket: 'images',
      region: 'us-east-1',
      endpoint: undefined,
      credentials: { accessKeyId: 'AKIA', secretAccessKey: 'secret' },
      forcePathStyle: false,
    });
    const minio = loadConfig({ ...base, ...S3, S3_ENDPOINT: 'http://minio:9000/', S3_REGION: 'auto', S3_FORCE_PATH_STYLE: 'true' }).uploads.s3;
    expect(minio).toMatchObject({ endpoint: 'http://minio:9000', region: 'auto', forcePathStyle: true });
  });

  it('S3 without keys uses the AWS SDK\'s default credential chain (instance role, AWS_* variables)', () => {
    expect(loadConfig({ ...base, S3_BUCKET: 'images' }).uploads.s3?.credentials).toBeUndefined();
  });

  it('refuses half a configuration, naming the variable', () => {
    expect(() => loadConfig({ ...base, S3_ENDPOINT: 'http://minio:9000' })).toThrow(ConfigError);
    expect(() => loadConfig({ ...base, S3_ENDPOINT: 'http://minio:9000' })).toThrow(/S3_BUCKET must be set with S3_ENDPOINT/);
    expect(() => loadConfig({ ...base, S3_ACCESS_KEY_ID: 'AKIA' })).toThrow(/S3_BUCKET/);
    expect(() => loadConfig({ ...base, S3_BUCKET: 'images', S3_ACCESS_KEY_ID: 'AKIA' })).toThrow(/S3_SECRET_ACCESS_KEY must be set with S3_ACCESS_KEY_ID/);
    expect(() => loadConfig({ ...base, S3_BUCKET: 'images', S3_SECRET_ACCESS_KEY: 'x' })).toThrow(/S3_ACCESS_KEY_ID must be set/);
    expect(() => loadConfig({ ...base, S3_BUCKET: 'a/b' })).toThrow(/S3_BUCKET must be a bucket name/);
    expect(() => loadConfig({ ...base, ...S3, S3_ENDPOINT: 'minio:9000' })).toThrow(/S3_ENDPOINT/);
    expect(() => loadConfig({ ...base, ...S3, S3_FORCE_PATH_STYLE: 'maybe' })).toThrow(/S3_FORCE_PATH_STYLE/);
  });
});
