import type { Task } from 'graphile-worker';
import { z } from 'zod';
import { recheckDomains } from '../modules/domains/index.js';
import type { JobDeps } from './deps.js';

/** Payload: none from the crontab; `{projectIds}` re-checks those projects only. */
const Payload = z.object({ projectIds: z.array(z.uuid()).optional() });

/**
 * Cron, every 5 minutes: re-checks the DKIM record of every domain (DESIGN §6). A record that
 * disappeared or changed un-verifies; a lookup error does not; a pending domain whose record
 * appeared is verified. Runs one at a time (its own queue); a failed run waits for the next.
 */
export const domainsRecheck =
  (deps: JobDeps): Task =>
  async (payload, helpers) => {
    const { projectIds } = Payload.parse(payload ?? {});
    const summary = await recheckDomains(deps, {
      projectIds,
      signal: helpers.abortSignal,
      log: (message, meta) => helpers.logger.info(message, meta),
    });
    helpers.logger.debug(`re-checked ${summary.checked} domains`, { ...summary });
  };
