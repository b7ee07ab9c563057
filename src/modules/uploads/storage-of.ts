import type { Config } from '../../config.js';
import { createLocalStorage } from './local-storage.js';
import { createS3Storage } from './s3-storage.js';
import type { UploadStorage } from './storage.js';

const storages = new WeakMap<Config, UploadStorage>();

/** The storage of this configuration (one per configuration: the S3 client keeps its connections). */
export function uploadStorage(config: Config): UploadStorage {
  let storage = storages.get(config);
  if (!storage) {
    const { s3, localDir } = config.uploads;
    storage = s3 ? createS3Storage(s3) : createLocalStorage(localDir);
    storages.set(config, storage);
  }
  return storage;
}
