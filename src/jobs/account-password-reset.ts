import type { Task } from 'graphile-worker';
import { z } from 'zod';
import { sendPasswordReset } from '../modules/accounts/index.js';
import type { JobDeps } from './deps.js';

export const AccountPasswordResetPayload = z.object({ email: z.string().min(1).max(254) });

/**
 * POST /auth/request-password-reset's work, off the request (docs/accounts.md): the account is
 * looked up here, so the answer takes the same time whether or not it exists. Nothing is logged
 * about the address or the outcome beyond what graphile-worker logs of every job.
 */
export const accountPasswordReset = (deps: JobDeps): Task => async (payload) => {
  const { email } = AccountPasswordResetPayload.parse(payload);
  await sendPasswordReset(deps.db, email, deps.config.publicUrl);
};
