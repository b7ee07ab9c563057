import type { Kysely, Transaction } from 'kysely';
import type { Database } from '../../db/schema.js';
import { validationError } from '../../http/errors.js';
import { deleteProjectData } from './lifecycle.repo.js';
import { deleteProject, type MemberProjectRow } from './projects.repo.js';
import { CAN, lockMemberProject } from './projects.service.js';

/**
 * Reset and deletion (docs/projects.md "Reset and delete"): OWNER only, confirmed by typing the
 * project's name. Each is one transaction that first locks the project row FOR UPDATE: a write of
 * the project (track, send, import…) takes a KEY SHARE lock on that row through its foreign key,
 * so it either committed before the lock (and is wiped) or waits and lands after the commit (and
 * survives); readers see all of the project's data or none of it; a crash rolls everything back.
 */

interface LifecycleInput {
  userId: string;
  projectId: string;
  confirm: string;
}

async function lockConfirmed(trx: Transaction<Database>, input: LifecycleInput, action: string): Promise<MemberProjectRow> {
  const project = await lockMemberProject(trx, input.userId, input.projectId, CAN.delete, action);
  if (input.confirm.trim() !== project.name) {
    throw validationError([{ field: 'confirm', message: `Type the project's name, "${project.name}", to ${action} it`, code: 'invalid_value' }]);
  }
  return project;
}

const isDeadlock = (err: unknown) => typeof err === 'object' && err !== null && 'code' in err && err.code === '40P01';

/**
 * Runs the transaction again (up to 3 times) when PostgreSQL chose it as a deadlock's victim: a
 * job of the project holding rows the wipe deletes while it waits for the project row. Rolled
 * back, it changed nothing; the job's transaction has gone on by then.
 */
async function retryDeadlock<T>(run: () => Promise<T>): Promise<T> {
  for (let attempt = 1; ; attempt++) {
    try {
      return await run();
    } catch (err) {
      if (attempt >= 3 || !isDeadlock(err)) throw err;
    }
  }
}

/** Irreversibly wipes the project's data; keeps the project, its keys, members, domains and suppressions. */
export async function resetProject(db: Kysely<Database>, input: LifecycleInput): Promise<MemberProjectRow> {
  return retryDeadlock(() =>
    db.transaction().execute(async (trx) => {
      const project = await lockConfirmed(trx, input, 'reset');
      await deleteProjectData(trx, project.id);
      return project;
    }),
  );
}

/**
 * Deletes the project and everything of it; its keys stop working with the commit (they are
 * looked up on every request, never cached). The data goes first in the reset's order (fast: the
 * cascade from the project row alone would delete contacts before their events, one statement per
 * contact), then the project row cascades to what is left (members, domains, suppressions…).
 */
export async function removeProject(db: Kysely<Database>, input: LifecycleInput): Promise<void> {
  await retryDeadlock(() =>
    db.transaction().execute(async (trx) => {
      const project = await lockConfirmed(trx, input, 'delete');
      await deleteProjectData(trx, project.id);
      await deleteProject(trx, project.id);
    }),
  );
}
