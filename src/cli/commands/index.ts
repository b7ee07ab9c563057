import type { Command } from '../command.js';
import { backup, restore } from './backup.js';
import { verifyDomain } from './domains.js';
import { listFeedback, replayFeedback } from './feedback.js';
import { outbox } from './outbox.js';
import { createProject, disableProject, enableProject, listProjects, printKeys } from './projects.js';
import { createUser, resetPasswordCommand } from './users.js';

/** Every command of `npm run admin`, in the order `help` lists them. Add new ones here. */
export const commands: readonly Command[] = [
  createUser,
  resetPasswordCommand,
  createProject,
  printKeys,
  listProjects,
  enableProject,
  disableProject,
  outbox,
  verifyDomain,
  listFeedback,
  replayFeedback,
  backup,
  restore,
];
