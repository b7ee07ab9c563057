import { sql, type Transaction } from 'kysely';
import type { Database } from '../../../../db/schema.js';
import type { JobDeps } from '../../../../jobs/deps.js';
import { callWebhook, type WebhookResult } from '../../webhook/call.js';
import { WebhookConfig } from '../../steps.schema.js';
import { applyResults } from '../apply.js';
import { emptyResults, type StepHandler, type StepRow } from '../types.js';

/** Calls made at once by one job (a batch of WEBHOOK step executions). */
const CALL_CONCURRENCY = 10;

export interface PendingWebhook {
  row: StepRow;
  workflowName: string;
  secret: string;
}

/** Never called: WEBHOOK rows are split off by the runner (startWebhooks / runWebhooks). */
export const webhook: StepHandler = async () => emptyResults();

/**
 * First half, inside the claim's transaction: the step executions RUNNING with one more attempt
 * (a crash during the call leaves them RUNNING; the job's retry calls again, with the same
 * X-Webhook-Id), with what the call needs.
 */
export async function startWebhooks(trx: Transaction<Database>, projectId: string, rows: readonly StepRow[]): Promise<PendingWebhook[]> {
  if (rows.length === 0) return [];
  await sql`
    UPDATE workflow_step_executions SET status = 'RUNNING', attempts = attempts + 1, started_at = coalesce(started_at, now())
    WHERE project_id = ${projectId}::uuid AND id = ANY(${rows.map((r) => r.id)}::uuid[])`.execute(trx);
  const { rows: info } = await sql<{ id: string; name: string; secret: string }>`
    SELECT w.id, w.name, p.webhook_secret AS secret FROM workflows w JOIN projects p ON p.id = w.project_id
    WHERE w.project_id = ${projectId}::uuid AND w.id = ANY(${[...new Set(rows.map((r) => r.workflowId))]}::uuid[])`.execute(trx);
  const byId = new Map(info.map((w) => [w.id, w]));
  return rows.map((row) => ({ row, workflowName: byId.get(row.workflowId)?.name ?? '', secret: byId.get(row.workflowId)?.secret ?? '' }));
}

async function call(deps: JobDeps, p: PendingWebhook): Promise<WebhookResult> {
  const parsed = WebhookConfig.safeParse(p.row.config);
  if (!parsed.success) {
    return { ok: false, status: null, bodyExcerpt: null, error: `invalid config: ${parsed.error.issues[0]?.message ?? ''}`, attempts: 0, method: null, url: null, durationMs: 0 };
  }
  const { row } = p;
  return callWebhook(
    {},
    {
      url: parsed.data.url,
      method: parsed.data.method,
      headers: parsed.data.headers,
      body: parsed.data.body,
      variables: {
        contact: { id: row.contactId, email: row.email, subscribed: row.subscribed, data: row.data },
        event: row.event,
        context: row.context,
        workflow: { id: row.workflowId, name: p.workflowName },
        execution: { id: row.executionId, startedAt: row.startedAt.toISOString() },
      },
      secret: p.secret,
      webhookId: row.id,
      allowPrivate: deps.config.webhookAllowPrivate,
    },
  );
}

/**
 * Second half, after the commit: the calls (CALL_CONCURRENCY at a time, no transaction open),
 * then one transaction records them on the step executions still RUNNING (a cancel meanwhile
 * wins): 2xx COMPLETED with status and body excerpt, anything else FAILED (execution FAILED).
 */
export async function runWebhooks(deps: JobDeps, projectId: string, pending: readonly PendingWebhook[]): Promise<void> {
  const answers = new Map<string, WebhookResult>();
  for (let i = 0; i < pending.length; i += CALL_CONCURRENCY) {
    const slice = pending.slice(i, i + CALL_CONCURRENCY);
    const results = await Promise.all(slice.map((p) => call(deps, p)));
    slice.forEach((p, j) => {
      const r = results[j];
      if (r) answers.set(p.row.id, r);
    });
  }
  await deps.db.transaction().execute(async (trx) => {
    await sql`
      SELECT id FROM workflow_executions WHERE project_id = ${projectId}::uuid AND id = ANY(${pending.map((p) => p.row.executionId)}::uuid[])
      ORDER BY id FOR UPDATE`.execute(trx);
    const { rows: still } = await sql<{ id: string }>`
      SELECT se.id FROM workflow_step_executions se
      JOIN workflow_executions x ON x.project_id = se.project_id AND x.id = se.execution_id AND x.status = 'RUNNING'
      WHERE se.project_id = ${projectId}::uuid AND se.id = ANY(${pending.map((p) => p.row.id)}::uuid[]) AND se.status = 'RUNNING'`.execute(trx);
    const running = new Set(still.map((r) => r.id));
    const results = emptyResults();
    for (const p of pending) {
      const r = answers.get(p.row.id);
      if (!r || !running.has(p.row.id)) continue;
      const output = { status: r.status, bodyExcerpt: r.bodyExcerpt, calls: r.attempts, method: r.method, url: r.url, durationMs: r.durationMs };
      if (r.ok) results.done.push({ row: p.row, branch: null, output });
      else results.failed.push({ row: p.row, error: r.error ?? `HTTP ${r.status ?? 'error'}`, output });
    }
    await applyResults(trx, projectId, results);
  });
}
