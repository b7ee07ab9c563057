import { type Kysely, sql, type Transaction } from 'kysely';
import { z } from 'zod';
import type { Database } from '../../db/schema.js';

/** Stores the pieces of an uploaded file, in order, in one statement (in the upload's transaction). */
export async function insertImportChunks(trx: Transaction<Database>, projectId: string, jobId: string, pieces: readonly Buffer[]): Promise<void> {
  if (pieces.length === 0) return;
  await trx
    .insertInto('import_chunks')
    .values(pieces.map((data, seq) => ({ job_id: jobId, project_id: projectId, seq, data })))
    .execute();
}

/** The stored file of a job, piece by piece, `perQuery` pieces per query (memory stays bounded). */
export async function* readImportChunks(db: Kysely<Database>, jobId: string, perQuery = 4): AsyncGenerator<Buffer> {
  let next = 0;
  for (;;) {
    const rows = await db
      .selectFrom('import_chunks')
      .select(['seq', 'data'])
      .where('job_id', '=', jobId)
      .where('seq', '>=', next)
      .orderBy('seq')
      .limit(perQuery)
      .execute();
    for (const row of rows) {
      yield row.data;
      next = row.seq + 1;
    }
    if (rows.length < perQuery) return;
  }
}

export async function deleteImportChunks(db: Kysely<Database> | Transaction<Database>, jobId: string): Promise<void> {
  await db.deleteFrom('import_chunks').where('job_id', '=', jobId).execute();
}

const PlanEstimate = z.array(z.object({ Plan: z.object({ 'Plan Rows': z.number() }) })).min(1);

/** The planner's estimate of the project's contacts (EXPLAIN only: nothing is read). */
export async function estimateProjectContacts(db: Kysely<Database>, projectId: string): Promise<number> {
  const { rows } = await sql<{ 'QUERY PLAN': unknown }>`
    EXPLAIN (FORMAT JSON) SELECT 1 FROM contacts WHERE project_id = ${projectId}`.execute(db);
  const plan = PlanEstimate.safeParse(rows[0]?.['QUERY PLAN']);
  return plan.success ? (plan.data[0]?.Plan['Plan Rows'] ?? 0) : 0;
}

/**
 * Refreshes the planner's statistics of contacts.project_id and email (a sample of at most
 * 30,000 rows). Without it, a project that an import is filling is still estimated at its old
 * size, and the upsert's lookup by email degrades to hashing all of the project's contacts on
 * every batch.
 */
export async function analyzeContactProjects(db: Kysely<Database>): Promise<void> {
  await sql`ANALYZE contacts (project_id, email)`.execute(db);
}

/**
 * For the rest of the transaction, costs random page reads like sequential ones: a batch
 * touches at most ~1,000 contacts by key, and at the default cost (4) the planner would rather
 * hash a whole table of up to ~150,000 contacts than probe the primary key 1,000 times (measured:
 * 93 ms instead of 24 ms per batch; docs/imports.md).
 */
export async function preferIndexProbes(trx: Transaction<Database>): Promise<void> {
  await sql`SET LOCAL random_page_cost = 1.1`.execute(trx);
}
