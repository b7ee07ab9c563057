import type { Kysely } from 'kysely';
import type { Database } from '../../db/schema.js';
import { conflict } from '../../http/errors.js';
import { findContactsByEmails, upsertContacts } from '../contacts/index.js';
import { addMembers, countMembers, removeMembers, setMemberCount } from './segments.repo.js';
import type { AddMembersBody, AddMembersResult, RemoveMembersBody, RemoveMembersResult } from './segments.schema.js';
import { requireSegment } from './segments.service.js';

/** STATIC only: members of a DYNAMIC segment follow its condition (409). */
function requireStatic(type: string): void {
  if (type !== 'STATIC') throw conflict('Members can only be managed on a STATIC segment', { type });
}

/**
 * Adds contacts by email. Unknown emails are counted as notFound, or created with
 * `createMissing` (`subscribed`, default true, applies to the created ones only).
 * The segment row is locked, so concurrent changes keep memberCount exact.
 */
export async function addStaticMembers(db: Kysely<Database>, projectId: string, id: string, body: AddMembersBody): Promise<AddMembersResult> {
  const emails = [...new Set(body.emails)];
  return db.transaction().execute(async (trx) => {
    const seg = await requireSegment(trx, projectId, id, true);
    requireStatic(seg.type);
    const existing = await findContactsByEmails(trx, projectId, emails);
    const known = new Set(existing.map((c) => c.email));
    const missing = emails.filter((e) => !known.has(e));
    const ids = existing.map((c) => c.id);
    let created = 0;
    if (body.createMissing && missing.length > 0) {
      const upserted = await upsertContacts(
        trx,
        projectId,
        missing.map((email) => ({ email, patch: {}, subscribedIfNew: body.subscribed ?? true })),
      );
      for (const u of upserted) {
        ids.push(u.row.id);
        if (u.isNew) created++;
      }
    }
    const added = ids.length > 0 ? await addMembers(trx, projectId, seg.id, ids) : 0;
    const memberCount = await countMembers(trx, seg.id);
    await setMemberCount(trx, seg.id, memberCount);
    return {
      added,
      alreadyMembers: ids.length - added,
      created,
      notFound: body.createMissing ? 0 : missing.length,
      memberCount,
    };
  });
}

export async function removeStaticMembers(db: Kysely<Database>, projectId: string, id: string, body: RemoveMembersBody): Promise<RemoveMembersResult> {
  const emails = [...new Set(body.emails)];
  return db.transaction().execute(async (trx) => {
    const seg = await requireSegment(trx, projectId, id, true);
    requireStatic(seg.type);
    const existing = await findContactsByEmails(trx, projectId, emails);
    const removed = existing.length > 0 ? await removeMembers(trx, seg.id, existing.map((c) => c.id)) : 0;
    const memberCount = await countMembers(trx, seg.id);
    await setMemberCount(trx, seg.id, memberCount);
    return { removed, notMembers: existing.length - removed, notFound: emails.length - existing.length, memberCount };
  });
}
