import type { Kysely, Transaction } from 'kysely';
import type { Database, ProjectRole } from '../../db/schema.js';
import { forbidden, notFound, validationError } from '../../http/errors.js';
import {
  findProjectOfUser,
  findWebhookSecret,
  type MemberProjectRow,
  replaceProjectKeys,
  replaceWebhookSecret,
  updateProject,
} from './projects.repo.js';
import type { UpdateProjectBody } from './projects.schema.js';

/** What each role may do to a project (DESIGN §4). */
export const CAN = {
  manage: ['OWNER', 'ADMIN'],
  delete: ['OWNER'],
} as const satisfies Record<string, readonly ProjectRole[]>;

/** The user's project locked FOR UPDATE (no write of the project interleaves), if their role is allowed: else 404/403. */
export async function lockMemberProject(
  trx: Transaction<Database>,
  userId: string,
  projectId: string,
  allowed: readonly ProjectRole[],
  action: string,
): Promise<MemberProjectRow> {
  return assertRole(await findProjectOfUser(trx, userId, projectId, { forUpdate: true }), allowed, action);
}

function assertRole(project: MemberProjectRow | undefined, allowed: readonly ProjectRole[], action: string): MemberProjectRow {
  if (!project) throw notFound('Project');
  if (!allowed.includes(project.role)) throw forbidden(`Only ${allowed.join(' or ')} members can ${action} this project`);
  return project;
}

/**
 * Name, tracking mode and sending rate. `maxSendingRate` is the operator's cap
 * (MAX_PROJECT_SENDING_RATE): a rate above it is refused with 422 on `sendingRate`.
 */
export async function updateProjectSettings(
  db: Kysely<Database>,
  input: { userId: string; projectId: string; patch: UpdateProjectBody; maxSendingRate?: number },
): Promise<MemberProjectRow> {
  const { name, tracking, sendingRate } = input.patch;
  if (typeof sendingRate === 'number' && input.maxSendingRate !== undefined && sendingRate > input.maxSendingRate) {
    throw validationError([
      { field: 'sendingRate', message: `At most ${input.maxSendingRate} emails per second on this instance`, code: 'too_big' },
    ]);
  }
  return db.transaction().execute(async (trx) => {
    const project = await lockMemberProject(trx, input.userId, input.projectId, CAN.manage, 'change');
    if (name === undefined && tracking === undefined && sendingRate === undefined) return project;
    const row = await updateProject(trx, project.id, { name, tracking, sending_rate: sendingRate });
    return { ...row, role: project.role };
  });
}

export async function regenerateProjectKeys(
  db: Kysely<Database>,
  input: { userId: string; projectId: string },
): Promise<MemberProjectRow> {
  return db.transaction().execute(async (trx) => {
    const project = await lockMemberProject(trx, input.userId, input.projectId, CAN.manage, 'rotate the keys of');
    const row = await replaceProjectKeys(trx, project.id);
    return { ...row, role: project.role };
  });
}

/** The project's webhook signing secret, for OWNER and ADMIN (it signs like the sk_ key authenticates). */
export async function readWebhookSecret(db: Kysely<Database>, input: { userId: string; projectId: string }): Promise<string> {
  const project = assertRole(await findProjectOfUser(db, input.userId, input.projectId), CAN.manage, 'read the webhook secret of');
  const secret = await findWebhookSecret(db, project.id);
  if (secret === undefined) throw notFound('Project');
  return secret;
}

/** A new webhook signing secret; the old one stops signing at once (receivers must switch). */
export async function rotateWebhookSecret(db: Kysely<Database>, input: { userId: string; projectId: string }): Promise<string> {
  return db.transaction().execute(async (trx) => {
    const project = await lockMemberProject(trx, input.userId, input.projectId, CAN.manage, 'rotate the webhook secret of');
    return replaceWebhookSecret(trx, project.id);
  });
}
