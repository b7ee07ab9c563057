import { type Kysely, sql, type SqlBool } from 'kysely';
import { conditionUsesField } from '../../conditions/index.js';
import type { Database } from '../../db/schema.js';

/**
 * Where other modules' things are used by workflow definitions (usage endpoints, template
 * delete). Exported through index.ts.
 */

export interface TemplateStepUse {
  workflowId: string;
  workflowName: string;
  stepId: string;
  stepName: string;
}

/** SEND_EMAIL steps using the template (index workflow_steps_template_idx). */
export async function workflowsUsingTemplate(db: Kysely<Database>, projectId: string, templateId: string): Promise<TemplateStepUse[]> {
  return db
    .selectFrom('workflow_steps as s')
    .innerJoin('workflows as w', (j) => j.onRef('w.project_id', '=', 's.project_id').onRef('w.id', '=', 's.workflow_id'))
    .select(['w.id as workflowId', 'w.name as workflowName', 's.id as stepId', 's.name as stepName'])
    .where('s.template_id', '=', templateId)
    .where('s.project_id', '=', projectId)
    .orderBy('w.created_at')
    .orderBy('s.created_at')
    .execute();
}

/** A CONDITION config with a filter on the tracked event `event.<name>` (activity operators only: `event.<key>` comparisons read the execution's data). */
const conditionUsesEvent = (name: string) =>
  sql<SqlBool>`jsonb_path_exists(s.config,
    '$.** ? (@.field == $f && (@.operator == "triggered" || @.operator == "notTriggered" || @.operator == "triggeredWithin" || @.operator == "triggeredOlderThan" || @.operator == "notTriggeredWithin"))',
    jsonb_build_object('f', ${`event.${name}`}::text))`;

/** Workflows triggered by the event, with WAIT_FOR_EVENT steps waiting for it, or CONDITION steps filtering on it. */
export async function workflowsUsingEvent(db: Kysely<Database>, projectId: string, eventName: string): Promise<{ id: string; name: string }[]> {
  const { rows } = await sql<{ id: string; name: string }>`
    SELECT w.id, w.name FROM workflows w
    WHERE w.project_id = ${projectId}::uuid AND (
      w.trigger_event = ${eventName}
      OR EXISTS (
        SELECT 1 FROM workflow_steps s WHERE s.project_id = w.project_id AND s.workflow_id = w.id AND (
          (s.type = 'WAIT_FOR_EVENT' AND s.config ->> 'eventName' = ${eventName})
          OR (s.type = 'CONDITION' AND ${conditionUsesEvent(eventName)}))))
    ORDER BY w.created_at DESC, w.id`.execute(db);
  return rows;
}

/** Workflows whose CONDITION steps filter on the contact field (`data.<key>`, `email`…) or whose UPDATE_CONTACT steps write the data key. */
export async function workflowsUsingField(db: Kysely<Database>, projectId: string, field: string): Promise<{ id: string; name: string }[]> {
  const key = field.startsWith('data.') ? field.slice(5) : undefined;
  const writes = key === undefined ? sql<SqlBool>`FALSE` : sql<SqlBool>`(s.type = 'UPDATE_CONTACT' AND s.config -> 'updates' ? ${key}::text)`;
  const { rows } = await sql<{ id: string; name: string }>`
    SELECT w.id, w.name FROM workflows w
    WHERE w.project_id = ${projectId}::uuid AND EXISTS (
      SELECT 1 FROM workflow_steps s WHERE s.project_id = w.project_id AND s.workflow_id = w.id AND (
        (s.type = 'CONDITION' AND ${conditionUsesField(sql.ref('s.config'), field)}) OR ${writes}))
    ORDER BY w.created_at DESC, w.id`.execute(db);
  return rows;
}

/** Workflows whose CONDITION steps filter on membership of the segment (`segment.<id>`, any case, at any depth). */
export async function workflowsUsingSegment(db: Kysely<Database>, projectId: string, segmentId: string): Promise<{ id: string; name: string }[]> {
  const { rows } = await sql<{ id: string; name: string }>`
    SELECT w.id, w.name FROM workflows w
    WHERE w.project_id = ${projectId}::uuid AND EXISTS (
      SELECT 1 FROM workflow_steps s WHERE s.project_id = w.project_id AND s.workflow_id = w.id
        AND s.type = 'CONDITION' AND s.config::text ILIKE ${`%"segment.${segmentId}"%`})
    ORDER BY w.created_at DESC, w.id`.execute(db);
  return rows;
}
