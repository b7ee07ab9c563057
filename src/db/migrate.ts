import { readdirSync } from 'node:fs';
import { type Kysely, type Migration, Migrator, sql } from 'kysely';
import { runMigrations as runWorkerMigrations } from 'graphile-worker';
import type pg from 'pg';
import type { Database } from './schema.js';

const MIGRATIONS_DIR = new URL('./migrations/', import.meta.url);
const MIGRATION_FILE = /^(\d{4}_[a-z0-9_]+)\.(?:ts|js)$/;

/**
 * Every file NNNN_name.ts of migrations/, in name order (kysely sorts them by name). A new
 * migration is a new file there, nothing else: modules add theirs without touching a shared list.
 */
async function loadMigrations(): Promise<Record<string, Migration>> {
  const names = shippedMigrationNames();
  const loaded = await Promise.all(names.map(async (name) => [name, (await import(new URL(`${name}.js`, MIGRATIONS_DIR).href)) as Migration] as const));
  for (const [name, m] of loaded) if (typeof m.up !== 'function') throw new Error(`migration ${name} exports no up()`);
  return Object.fromEntries(loaded);
}

let shipped: readonly string[] | undefined;
/** The names of the migrations this version ships (read once): what GET /health/ready expects applied. */
export function shippedMigrationNames(): readonly string[] {
  shipped ??= Object.freeze([...new Set(readdirSync(MIGRATIONS_DIR).flatMap((f) => MIGRATION_FILE.exec(f)?.[1] ?? []))].sort());
  return shipped;
}

/** The migration table kysely's Migrator keeps (its default name): one row per applied migration. */
export const MIGRATION_TABLE = 'kysely_migration';

/** Migrations recorded as applied that this version does not ship: a newer version ran them. */
async function newerMigrations(db: Kysely<Database>): Promise<string[]> {
  const { rows: table } = await sql<{ exists: boolean }>`SELECT to_regclass(${MIGRATION_TABLE}) IS NOT NULL AS exists`.execute(db);
  if (!table[0]?.exists) return []; // a new database
  const { rows } = await sql<{ name: string }>`SELECT name FROM ${sql.table(MIGRATION_TABLE)}`.execute(db);
  const shippedNames = new Set(shippedMigrationNames());
  return rows.map((r) => r.name).filter((name) => !shippedNames.has(name));
}

/**
 * Brings the schema up to date: our tables (kysely Migrator, which holds a lock so
 * concurrent starts are safe) and graphile-worker's own schema. Returns the migrations of a newer
 * version found applied: migrations only expand the schema while an older version may still run
 * (docs/operations.md "Upgrades"), so this version starts on it — a process of the previous
 * release restarted during a rolling upgrade — and applies only its own missing ones, if any.
 */
export async function migrateToLatest(db: Kysely<Database>, pool: pg.Pool): Promise<{ newer: string[] }> {
  const newer = await newerMigrations(db);
  // kysely refuses applied migrations its provider lacks: they are listed as done, never run.
  const applied: Migration = {
    up: () => Promise.reject(new Error('a migration of a newer version cannot run in this one')),
  };
  const migrator = new Migrator({
    db,
    provider: { getMigrations: async () => ({ ...(await loadMigrations()), ...Object.fromEntries(newer.map((name) => [name, applied])) }) },
    allowUnorderedMigrations: newer.length > 0,
  });
  const { error, results } = await migrator.migrateToLatest();
  const failed = results?.find((r) => r.status === 'Error');
  if (error || failed) {
    throw new Error(`migration ${failed?.migrationName ?? ''} failed`, { cause: error });
  }
  await runWorkerMigrations({ pgPool: pool });
  return { newer };
}
