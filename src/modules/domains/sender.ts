import type { Kysely } from 'kysely';
import type { Database } from '../../db/schema.js';
import { ApiError, ErrorCode } from '../../http/errors.js';

import { domainOf } from '../../mail/address.js';

export { domainOf };

export async function isVerifiedSender(db: Kysely<Database>, projectId: string, fromEmail: string): Promise<boolean> {
  const row = await db
    .selectFrom('domains')
    .select('id')
    .where('project_id', '=', projectId)
    .where('domain', '=', domainOf(fromEmail))
    .where('verified', '=', true)
    .executeTakeFirst();
  return row !== undefined;
}

/**
 * Only a domain verified by the project may be a sender. Templates and campaigns answer 403
 * with code INTERNAL_SERVER_ERROR (SPEC Errors, "Specific codes"); sends answer 403 FORBIDDEN.
 */
export async function assertVerifiedSender(
  db: Kysely<Database>,
  input: { projectId: string; fromEmail: string; code?: 'INTERNAL_SERVER_ERROR' | 'FORBIDDEN' },
): Promise<void> {
  if (await isVerifiedSender(db, input.projectId, input.fromEmail)) return;
  const domain = domainOf(input.fromEmail);
  throw new ApiError(403, input.code ?? ErrorCode.FORBIDDEN, `The sender domain ${domain} is not verified for this project`, {
    suggestion: `Add ${domain} with POST /domains, publish its DKIM record, then check it with GET /domains/:id/verify`,
  });
}
