import type { Kysely } from 'kysely';
import type { Database } from '../../db/schema.js';
import { conflict, ErrorCode, notFound } from '../../http/errors.js';
import { isUuid } from '../../lib/uuid.js';
import { assertVerifiedSender } from '../domains/index.js';
import { workflowsUsingTemplate } from '../workflows/index.js';
import {
  copyTemplate,
  countTemplates,
  deleteTemplate,
  findTemplateById,
  insertTemplate,
  listTemplatePage,
  rowToTemplate,
  type TemplateFilter,
  type TemplateValues,
  updateTemplate,
} from './templates.repo.js';
import type { ListTemplatesQuery, Template, TemplateList, TemplateUsage, UpdateTemplateBody } from './templates.schema.js';

/** POST /templates input once `from` is known to be present (the route answers the legacy 400 otherwise). */
export type CreateTemplateInput = Partial<Omit<TemplateValues, 'from'>> & { from: string };

/** Templates and campaigns answer an unverified sender with 403 code INTERNAL_SERVER_ERROR (SPEC Errors). */
const checkSender = (db: Kysely<Database>, projectId: string, fromEmail: string) =>
  assertVerifiedSender(db, { projectId, fromEmail, code: ErrorCode.INTERNAL_SERVER_ERROR });

/** The same address: the domain compares case-insensitively, and so does the local part in practice. */
const sameAddress = (a: string, b: string) => a.toLowerCase() === b.toLowerCase();

export async function listTemplates(db: Kysely<Database>, projectId: string, query: ListTemplatesQuery): Promise<TemplateList> {
  const { page, pageSize, sort, dir } = query;
  const filter: TemplateFilter = { type: query.type, search: query.search?.trim() || undefined };
  const [rows, total] = await Promise.all([
    listTemplatePage(db, projectId, { filter, sort, dir, limit: pageSize, offset: (page - 1) * pageSize }),
    countTemplates(db, projectId, filter),
  ]);
  return { data: rows.map(rowToTemplate), page, pageSize, total, totalPages: Math.ceil(total / pageSize) };
}

export async function getTemplate(db: Kysely<Database>, projectId: string, id: string): Promise<Template> {
  const row = isUuid(id) ? await findTemplateById(db, projectId, id) : undefined;
  if (!row) throw notFound('Template');
  return rowToTemplate(row);
}

export async function createTemplate(db: Kysely<Database>, projectId: string, input: CreateTemplateInput): Promise<Template> {
  await checkSender(db, projectId, input.from);
  const row = await insertTemplate(db, projectId, {
    name: input.name ?? '',
    description: input.description ?? '',
    subject: input.subject ?? '',
    body: input.body ?? '',
    from: input.from,
    fromName: input.fromName ?? null,
    replyTo: input.replyTo ?? null,
    type: input.type ?? 'MARKETING',
  });
  return rowToTemplate(row);
}

/**
 * PATCH: only the given fields change (null clears fromName and replyTo). A new `from` must be
 * on a verified domain; re-sending the current address is not re-checked, so a dashboard that
 * saves the whole form can still edit a template whose domain has lapsed since. A PATCH that
 * changes nothing writes nothing (updatedAt stays).
 */
export async function patchTemplate(db: Kysely<Database>, projectId: string, id: string, body: UpdateTemplateBody): Promise<Template> {
  const current = isUuid(id) ? await findTemplateById(db, projectId, id) : undefined;
  if (!current) throw notFound('Template');
  const existing = rowToTemplate(current);
  const changes: Partial<TemplateValues> = {};
  if (body.name !== undefined && body.name !== existing.name) changes.name = body.name;
  if (body.description !== undefined && body.description !== existing.description) changes.description = body.description;
  if (body.subject !== undefined && body.subject !== existing.subject) changes.subject = body.subject;
  if (body.body !== undefined && body.body !== existing.body) changes.body = body.body;
  if (body.from !== undefined && body.from !== existing.from) changes.from = body.from;
  if (body.fromName !== undefined && body.fromName !== existing.fromName) changes.fromName = body.fromName;
  if (body.replyTo !== undefined && body.replyTo !== existing.replyTo) changes.replyTo = body.replyTo;
  if (body.type !== undefined && body.type !== existing.type) changes.type = body.type;
  if (Object.keys(changes).length === 0) return existing;
  if (changes.from !== undefined && !sameAddress(changes.from, existing.from)) await checkSender(db, projectId, changes.from);
  const row = await updateTemplate(db, projectId, id, changes);
  // Deleted between the read and the write.
  if (!row) throw notFound('Template');
  return rowToTemplate(row);
}

/** 409 while workflow SEND_EMAIL steps use it (details.workflows); their foreign key also refuses a step added meanwhile. */
export async function removeTemplate(db: Kysely<Database>, projectId: string, id: string): Promise<void> {
  if (!isUuid(id)) throw notFound('Template');
  const inUse = async () => {
    const workflows = await workflowsUsingTemplate(db, projectId, id);
    return workflows.length > 0 ? conflict('Workflow steps send this template: change or delete them first', { workflows }) : undefined;
  };
  const used = await inUse();
  if (used) throw used;
  let deleted: boolean;
  try {
    deleted = await deleteTemplate(db, projectId, id);
  } catch (err) {
    const raced = isForeignKeyViolation(err) ? await inUse() : undefined;
    throw raced ?? err;
  }
  if (!deleted) throw notFound('Template');
}

const isForeignKeyViolation = (err: unknown) => typeof err === 'object' && err !== null && 'code' in err && err.code === '23503';

/**
 * A copy named "<name> (copy)" with every other field as is. The sender is not re-checked:
 * the copy sends from the same address as the original, and sending checks the domain anyway.
 */
export async function duplicateTemplate(db: Kysely<Database>, projectId: string, id: string): Promise<Template> {
  const row = isUuid(id) ? await copyTemplate(db, projectId, id) : undefined;
  if (!row) throw notFound('Template');
  return rowToTemplate(row);
}

/**
 * Campaigns and workflow steps that reference the template. Campaigns hold their own copy of
 * subject and body, so none does (docs/templates.md); workflow SEND_EMAIL steps do. The template
 * must exist (404 otherwise).
 */
export async function templateUsage(db: Kysely<Database>, projectId: string, id: string): Promise<TemplateUsage> {
  const template = await getTemplate(db, projectId, id);
  const steps = await workflowsUsingTemplate(db, projectId, template.id);
  return {
    templateId: template.id,
    campaigns: [],
    workflows: steps.map((s) => ({ id: s.workflowId, name: s.workflowName, ...s })),
  };
}
