import { isUuid } from '../../lib/uuid.js';
import { findCapturedMessage, listOutbox } from '../../modules/emails/index.js';
import { defineCommand } from '../command.js';
import { CliError, optional, toggle } from '../flags.js';
import { clean, printError } from '../io.js';

const DEFAULT_LIMIT = 20;
const MAX_LIMIT = 10_000;

/**
 * The capture outbox (no SMTP_URL): what would have been sent. One tab-separated line per
 * message, newest first: captured at, email id, project id (`system` for the instance's own
 * account mail), recipient, subject, Message-ID.
 */
export const outbox = defineCommand({
  name: 'outbox',
  summary: 'List captured messages (mail kept in the database when SMTP_URL is unset), newest first; --show prints one raw',
  flags: {
    project: optional('PROJECT_ID', 'only messages of this project'),
    system: toggle("only the instance's own account mail (verification, password reset, invitations, notices)"),
    limit: optional('N', `at most N messages (default ${DEFAULT_LIMIT}, at most ${MAX_LIMIT})`),
    show: optional('EMAIL_ID', 'print the raw message (RFC 5322, as signed) of this email instead'),
  },
  async run({ db, flags, print }) {
    if (flags.show !== undefined) {
      const raw = await findCapturedMessage(db, flags.show.trim());
      if (!raw) throw new CliError(`no captured message for email ${flags.show.trim()}`);
      print(raw.toString('utf8').replace(/\r\n/g, '\n').replace(/\n$/, ''));
      return;
    }
    const limit = flags.limit === undefined ? DEFAULT_LIMIT : Number(flags.limit);
    if (!Number.isInteger(limit) || limit < 1 || limit > MAX_LIMIT) throw new CliError(`--limit must be a whole number from 1 to ${MAX_LIMIT}`);
    const projectId = flags.project?.trim();
    if (projectId !== undefined && !isUuid(projectId)) throw new CliError(`no project with id ${projectId}`);
    if (projectId !== undefined && flags.system) throw new CliError('--project and --system exclude each other');
    const entries = await listOutbox(db, { projectId, system: flags.system, limit });
    for (const e of entries) {
      print([e.capturedAt.toISOString(), e.emailId, e.projectId ?? 'system', clean(e.to), clean(e.subject), clean(e.messageId)].join('\t'));
    }
    if (entries.length === 0) printError('no captured messages');
  },
});
