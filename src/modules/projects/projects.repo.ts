import { randomBytes } from 'node:crypto';
import { type Kysely, sql, type Transaction } from 'kysely';
import { type Database, INSTANCE_PROJECT_ID, type ProjectRole, type ProjectRow, type TrackingMode } from '../../db/schema.js';
import { generateKeyPair } from '../../lib/keys.js';
import { isUuid } from '../../lib/uuid.js';
import type { Project } from './projects.schema.js';

/** A project as its members see it; the webhook secret is read through its own route. */
export type MemberProjectRow = Omit<ProjectRow, 'webhook_secret'> & { role: ProjectRole };

export function rowToProject(row: MemberProjectRow): Project {
  return {
    id: row.id,
    name: row.name,
    public: row.public_key,
    // Keys are for OWNERs and ADMINs (DESIGN §4): a MEMBER works through the session cookie.
    secret: row.role === 'MEMBER' ? null : row.secret_key,
    disabled: row.disabled,
    disabledReason: row.disabled_reason,
    tracking: row.tracking,
    sendingRate: row.sending_rate,
    role: row.role,
    createdAt: row.created_at.toISOString(),
    updatedAt: row.updated_at.toISOString(),
  };
}

const projectColumns = [
  'p.id',
  'p.name',
  'p.public_key',
  'p.secret_key',
  'p.disabled',
  'p.disabled_reason',
  'p.disabled_at',
  'p.tracking',
  'p.sending_rate',
  'p.created_at',
  'p.updated_at',
  'm.role',
] as const;

export async function listProjectsOfUser(db: Kysely<Database>, userId: string): Promise<MemberProjectRow[]> {
  return db
    .selectFrom('memberships as m')
    .innerJoin('projects as p', 'p.id', 'm.project_id')
    .select(projectColumns)
    .where('m.user_id', '=', userId)
    .orderBy('p.created_at', 'asc')
    .execute();
}

export async function findProjectOfUser(
  db: Kysely<Database> | Transaction<Database>,
  userId: string,
  projectId: string,
  opts: { forUpdate?: boolean } = {},
): Promise<MemberProjectRow | undefined> {
  if (!isUuid(projectId)) return undefined;
  let q = db
    .selectFrom('memberships as m')
    .innerJoin('projects as p', 'p.id', 'm.project_id')
    .select(projectColumns)
    .where('m.user_id', '=', userId)
    .where('m.project_id', '=', projectId);
  if (opts.forUpdate) q = q.forUpdate('p');
  return q.executeTakeFirst();
}

/** Creates a project with a fresh key pair and its owner's membership, in one transaction. */
export async function insertProject(db: Kysely<Database>, input: { name: string; ownerId: string }): Promise<MemberProjectRow> {
  return db.transaction().execute(async (trx) => {
    const keys = generateKeyPair();
    const project = await trx
      .insertInto('projects')
      .values({ name: input.name, public_key: keys.publicKey, secret_key: keys.secretKey })
      .returningAll()
      .executeTakeFirstOrThrow();
    await trx.insertInto('memberships').values({ project_id: project.id, user_id: input.ownerId, role: 'OWNER' }).execute();
    return { ...project, role: 'OWNER' as const };
  });
}

export async function updateProject(
  trx: Transaction<Database>,
  projectId: string,
  patch: { name?: string; tracking?: TrackingMode; sending_rate?: number | null },
): Promise<ProjectRow> {
  return trx
    .updateTable('projects')
    .set({ ...patch, updated_at: sql`now()` })
    .where('id', '=', projectId)
    .returningAll()
    .executeTakeFirstOrThrow();
}

/** Replaces both keys at once; the old pair stops working with this commit. */
export async function replaceProjectKeys(trx: Transaction<Database>, projectId: string): Promise<ProjectRow> {
  const keys = generateKeyPair();
  return trx
    .updateTable('projects')
    .set({ public_key: keys.publicKey, secret_key: keys.secretKey, updated_at: sql`now()` })
    .where('id', '=', projectId)
    .returningAll()
    .executeTakeFirstOrThrow();
}

/** A fresh WEBHOOK signing secret: `whsec_` + 256 random bits in hex (migration 0015's format). */
export const generateWebhookSecret = (): string => `whsec_${randomBytes(32).toString('hex')}`;

/** The secret that signs the project's WEBHOOK step calls. */
export async function findWebhookSecret(db: Kysely<Database> | Transaction<Database>, projectId: string): Promise<string | undefined> {
  if (!isUuid(projectId)) return undefined;
  const row = await db.selectFrom('projects').select('webhook_secret').where('id', '=', projectId).executeTakeFirst();
  return row?.webhook_secret;
}

/** Replaces the webhook secret; calls signed from this commit on use the new one. */
export async function replaceWebhookSecret(trx: Transaction<Database>, projectId: string): Promise<string> {
  const row = await trx
    .updateTable('projects')
    .set({ webhook_secret: generateWebhookSecret(), updated_at: sql`now()` })
    .where('id', '=', projectId)
    .returning('webhook_secret')
    .executeTakeFirstOrThrow();
  return row.webhook_secret;
}

export async function deleteProject(trx: Transaction<Database>, projectId: string): Promise<void> {
  await trx.deleteFrom('projects').where('id', '=', projectId).execute();
}

/** A project by id; never the instance mail's row (INSTANCE_PROJECT_ID), which is no project. */
export async function findProjectById(db: Kysely<Database>, projectId: string): Promise<ProjectRow | undefined> {
  if (!isUuid(projectId) || projectId === INSTANCE_PROJECT_ID) return undefined;
  return db.selectFrom('projects').selectAll().where('id', '=', projectId).executeTakeFirst();
}
