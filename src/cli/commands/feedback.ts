import { isUuid } from '../../lib/uuid.js';
import { listStoredFeedback, replayStoredFeedback } from '../../modules/bounces/index.js';
import { defineCommand } from '../command.js';
import { CliError, optional, required } from '../flags.js';
import { clean, printError } from '../io.js';

const DEFAULT_LIMIT = 20;
const MAX_LIMIT = 10_000;

/**
 * The reports the inbound SMTP receiver stored (inbound_feedback, docs/bounces.md), newest first:
 * one tab-separated line each: received at, id, project id (`-` when none), email id (`-`),
 * kind, outcome, remote address, subject.
 */
export const listFeedback = defineCommand({
  name: 'feedback-list',
  summary: 'List the reports the inbound SMTP receiver stored (bounces, complaints, auto-replies), newest first',
  flags: {
    project: optional('PROJECT_ID', 'only reports about this project'),
    limit: optional('N', `at most N reports (default ${DEFAULT_LIMIT}, at most ${MAX_LIMIT})`),
  },
  async run({ db, flags, print }) {
    const limit = flags.limit === undefined ? DEFAULT_LIMIT : Number(flags.limit);
    if (!Number.isInteger(limit) || limit < 1 || limit > MAX_LIMIT) throw new CliError(`--limit must be a whole number from 1 to ${MAX_LIMIT}`);
    const projectId = flags.project?.trim();
    if (projectId !== undefined && !isUuid(projectId)) throw new CliError(`no project with id ${projectId}`);
    const rows = await listStoredFeedback(db, { projectId, limit });
    for (const r of rows) {
      print([r.received_at.toISOString(), r.id, r.project_id ?? '-', r.email_id ?? '-', r.kind, r.outcome, clean(r.remote_address), clean(r.subject ?? '')].join('\t'));
    }
    if (rows.length === 0) printError('no stored reports');
  },
});

/** Operator output of the replay is the record: the feedback path's log lines are not needed here. */
const quiet = { info: () => undefined, warn: (obj: object, msg: string) => printError(`warning: ${msg} ${JSON.stringify(obj)}`) };

/**
 * Re-applies one stored report through the shared feedback path (docs/bounces.md "Replaying a
 * stored report"). Idempotent: a report already applied changes nothing, and the command says so.
 */
export const replayFeedback = defineCommand({
  name: 'feedback-replay',
  summary: 'Re-apply a stored report (a DSN, ARF complaint…) by id; a report already applied changes nothing',
  flags: {
    id: required('REPORT_ID', 'the id feedback-list shows'),
  },
  async run({ db, flags, print }) {
    const id = flags.id.trim();
    if (!isUuid(id)) throw new CliError(`no stored report with id ${id}`);
    const autoDisable = !['false', '0', 'no', 'off'].includes((process.env.AUTO_DISABLE_PROJECTS ?? '').trim().toLowerCase());
    const result = await replayStoredFeedback(db, id, quiet, { autoDisable });
    if (!result) throw new CliError(`no stored report with id ${id}`);
    if (!result.applied) throw new CliError(`report ${id} cannot be replayed: ${result.reason}`);
    const what = `report ${id} (${result.kind}) about email ${result.row.email_id ?? '-'}`;
    if (result.changed) print(`applied ${what}: ${result.outcome}`);
    else print(`nothing changed: ${what}: ${result.outcome === 'duplicate' ? 'already applied' : result.outcome}`);
  },
});
