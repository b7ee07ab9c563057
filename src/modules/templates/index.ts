/** The templates module's facade: what other modules and the app import. */
import type { Kysely, Transaction } from 'kysely';
import type { Database, TemplateRow } from '../../db/schema.js';
import { isUuid } from '../../lib/uuid.js';
import { findTemplateById } from './templates.repo.js';

export { SORT_DIRS, type SortDir, TEMPLATE_LIMITS } from './templates.schema.js';

/** A template of the project (senders: /v1/send, workflow steps), in the caller's transaction if given; undefined for a malformed id. */
export async function findTemplate(db: Kysely<Database> | Transaction<Database>, projectId: string, templateId: string): Promise<TemplateRow | undefined> {
  if (!isUuid(templateId)) return undefined;
  return findTemplateById(db, projectId, templateId);
}
/** Workflow definitions: the SEND_EMAIL steps' templates in one query. */
export { findTemplatesByIds } from './templates.repo.js';

// Routes last: they import other modules' facades, which may import this one back (cycles
// resolve because everything above is evaluated first).
export { templatesRoutes } from './templates.routes.js';
