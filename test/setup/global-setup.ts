import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import type { TestProject } from 'vitest/node';
import { connect } from '../../src/db/connection.js';
import { startEmbeddedPostgres } from '../../src/db/embedded.js';
import { migrateToLatest } from '../../src/db/migrate.js';

declare module 'vitest' {
  export interface ProvidedContext {
    databaseUrl: string;
  }
}

/** One real PostgreSQL for the whole run; tests isolate by creating their own projects. */
export default async function setup(project: TestProject): Promise<() => Promise<void>> {
  const root = mkdtempSync(path.join(tmpdir(), 'mailplatform-test-'));
  const pg = await startEmbeddedPostgres({ dir: path.join(root, 'postgres') });
  const { db, pool, close } = connect(pg.url);
  await migrateToLatest(db, pool);
  await close();
  project.provide('databaseUrl', pg.url);
  return async () => {
    await pg.stop();
    rmSync(root, { recursive: true, force: true });
  };
}
