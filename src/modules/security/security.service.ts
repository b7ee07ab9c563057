import type { Kysely, Transaction } from 'kysely';
import type { Database, SuspensionSource } from '../../db/schema.js';
import { notFound } from '../../http/errors.js';
import { enqueueProjectMailCancel, queueSystemEmail } from '../emails/index.js';
import { enqueueProjectCancel } from '../workflows/index.js';
import { suspensionNotice } from './notice.js';
import {
  insertSuspension,
  liftOpenSuspensions,
  listManagerEmails,
  listSuspensions,
  lockProject,
  markProjectDisabled,
  markProjectEnabled,
  readReputation,
  type ReputationRow,
} from './security.repo.js';
import { type Assessment, assessReputation, describeMetric } from './thresholds.js';

/** How many suspensions the security state lists (newest first). */
export const SUSPENSION_HISTORY_LIMIT = 50;

/**
 * Disables the project (if enabled), records the suspension, queues the cancellation of its
 * queued mail and of its workflow executions, and emails its OWNERs and ADMINs, all in the
 * caller's transaction. False when the project was already disabled (nothing is done then).
 * The one way a project is disabled: the reputation check, the operator CLI and billing call it.
 */
export async function suspendProject(
  trx: Transaction<Database>,
  input: { projectId: string; source: SuspensionSource; reason: string; metrics?: Record<string, unknown> },
): Promise<boolean> {
  const project = await markProjectDisabled(trx, input.projectId, input.reason);
  if (!project) return false;
  await insertSuspension(trx, input);
  await enqueueProjectMailCancel(trx, input.projectId);
  await enqueueProjectCancel(trx, input.projectId);
  const notice = suspensionNotice({ projectId: input.projectId, projectName: project.name, source: input.source, reason: input.reason });
  for (const to of await listManagerEmails(trx, input.projectId)) {
    await queueSystemEmail(trx, { to, subject: notice.subject, text: notice.text, kind: 'project-disabled', projectId: input.projectId });
  }
  return true;
}

/**
 * The operator's lift (CLI `enable-project`): the project is enabled and its open suspensions
 * are marked lifted by `by`, with the totals at this moment (the reputation counts from here).
 * Undefined when there is no such project; `wasDisabled` false when it was enabled already
 * (nothing is recorded then).
 */
export async function liftProjectSuspension(
  db: Kysely<Database>,
  input: { projectId: string; by: string },
): Promise<{ id: string; name: string; wasDisabled: boolean; lifted: number } | undefined> {
  return db.transaction().execute(async (trx) => {
    const project = await lockProject(trx, input.projectId);
    if (!project) return undefined;
    if (!project.disabled) return { id: project.id, name: project.name, wasDisabled: false, lifted: 0 };
    await markProjectEnabled(trx, project.id);
    const lifted = await liftOpenSuspensions(trx, { projectId: project.id, by: input.by, reason: project.disabled_reason });
    return { id: project.id, name: project.name, wasDisabled: true, lifted };
  });
}

export interface ReputationCheck {
  assessment: Assessment;
  /** The reason when this call disabled the project. */
  disabledReason?: string;
}

/**
 * The reputation check of a bounce or complaint notification (in its transaction): reads the
 * counters (one statement, docs/security.md), judges them, and on a critical level suspends the
 * project when `autoDisable` (AUTO_DISABLE_PROJECTS) and it is enabled.
 */
export async function checkProjectReputation(
  trx: Transaction<Database>,
  projectId: string,
  opts: { autoDisable: boolean },
): Promise<ReputationCheck | undefined> {
  const row = await readReputation(trx, projectId);
  if (!row) return undefined;
  const assessment = assessReputation(row.counts, { young: row.young });
  const worst = assessment.critical[0];
  if (worst === undefined || row.disabled || !opts.autoDisable) return { assessment };
  const reason = describeMetric(worst, assessment.metrics[worst], row.counts);
  const metrics = { level: assessment.level, critical: assessment.critical, counts: row.counts, young: row.young };
  const disabled = await suspendProject(trx, { projectId, source: 'AUTOMATIC', reason, metrics });
  return disabled ? { assessment, disabledReason: reason } : { assessment };
}

export interface SecurityState {
  row: ReputationRow;
  assessment: Assessment;
  suspensions: Awaited<ReturnType<typeof listSuspensions>>;
}

/** The project's counts, levels and suspensions (the caller checked the membership). */
export async function readSecurityState(db: Kysely<Database>, projectId: string): Promise<SecurityState> {
  const row = await readReputation(db, projectId);
  if (!row) throw notFound('Project');
  const suspensions = await listSuspensions(db, projectId, SUSPENSION_HISTORY_LIMIT);
  return { row, assessment: assessReputation(row.counts, { young: row.young }), suspensions };
}
