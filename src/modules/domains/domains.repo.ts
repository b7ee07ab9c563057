import { type Kysely, sql } from 'kysely';
import { isUniqueViolation } from '../../db/errors.js';
import type { Database, DomainRecord, DomainRow } from '../../db/schema.js';
import { conflict } from '../../http/errors.js';
import { isUuid } from '../../lib/uuid.js';
import type { Domain } from './domains.schema.js';

/** The partial unique index: a domain is verified by at most one project. */
export const VERIFIED_DOMAIN_INDEX = 'domains_verified_domain_key';
const PROJECT_DOMAIN_INDEX = 'domains_project_domain_key';

export const takenMessage = (domain: string) => `${domain} is already verified by another project`;

export function rowToDomain(row: DomainRow): Domain {
  return {
    id: row.id,
    domain: row.domain,
    projectId: row.project_id,
    verified: row.verified,
    records: row.records.map((r) => ({
      type: r.type,
      name: r.name,
      value: r.value,
      purpose: r.purpose,
      required: r.required,
      verified: r.verified,
      ...(r.error !== undefined && { error: r.error }),
    })),
    verifiedAt: row.verified_at?.toISOString() ?? null,
    lastCheckedAt: row.last_checked_at?.toISOString() ?? null,
    inboundEnabled: row.inbound_enabled,
    createdAt: row.created_at.toISOString(),
    updatedAt: row.updated_at.toISOString(),
  };
}

export interface NewDomain {
  projectId: string;
  domain: string;
  selector: string;
  publicKey: string;
  /** Already sealed. */
  sealedPrivateKey: string;
  records: DomainRecord[];
}

/** Adds a pending domain; the same domain twice in one project is a 409. */
export async function insertDomain(db: Kysely<Database>, input: NewDomain): Promise<DomainRow> {
  try {
    return await db
      .insertInto('domains')
      .values({
        project_id: input.projectId,
        domain: input.domain,
        dkim_selector: input.selector,
        dkim_public_key: input.publicKey,
        dkim_private_key: input.sealedPrivateKey,
        records: JSON.stringify(input.records),
      })
      .returningAll()
      .executeTakeFirstOrThrow();
  } catch (err) {
    if (isUniqueViolation(err, PROJECT_DOMAIN_INDEX)) throw domainExists(input.domain);
    throw err;
  }
}

export const domainExists = (domain: string) => conflict(`${domain} has already been added to this project`, { domain });

export async function findDomainByName(db: Kysely<Database>, projectId: string, domain: string): Promise<DomainRow | undefined> {
  return db.selectFrom('domains').selectAll().where('project_id', '=', projectId).where('domain', '=', domain).executeTakeFirst();
}

/** True when a project other than `projectId` has `domain` verified. */
export async function isVerifiedElsewhere(db: Kysely<Database>, domain: string, projectId: string): Promise<boolean> {
  const row = await db
    .selectFrom('domains')
    .select('id')
    .where('domain', '=', domain)
    .where('verified', '=', true)
    .where('project_id', '<>', projectId)
    .executeTakeFirst();
  return row !== undefined;
}

/** The project's domains, newest first. */
export async function listDomainsOfProject(db: Kysely<Database>, projectId: string): Promise<DomainRow[]> {
  return db.selectFrom('domains').selectAll().where('project_id', '=', projectId).orderBy('created_at', 'desc').orderBy('id', 'desc').execute();
}

export async function findDomainOfProject(db: Kysely<Database>, projectId: string, id: string): Promise<DomainRow | undefined> {
  if (!isUuid(id)) return undefined;
  return db.selectFrom('domains').selectAll().where('id', '=', id).where('project_id', '=', projectId).executeTakeFirst();
}

/** Sets a domain's inbound flag (PATCH /domains/:id); undefined when the project has no such domain. */
export async function setInboundEnabled(db: Kysely<Database>, projectId: string, id: string, enabled: boolean): Promise<DomainRow | undefined> {
  if (!isUuid(id)) return undefined;
  return db
    .updateTable('domains')
    .set({ inbound_enabled: enabled, updated_at: sql`now()` })
    .where('id', '=', id)
    .where('project_id', '=', projectId)
    .returningAll()
    .executeTakeFirst();
}

/** The verified, inbound-enabled domain that receives mail for `host`: the host itself or its nearest parent. */
export interface InboundDomain {
  id: string;
  projectId: string;
  domain: string;
}

/**
 * The inbound receiver's RCPT check: the verified domain with inbound enabled that `host` is, or
 * is a subdomain of (the longest match). One probe of the partial unique index on verified
 * domains with at most 127 candidate names (a host's suffixes of two labels or more).
 */
export async function findInboundDomain(db: Kysely<Database>, host: string): Promise<InboundDomain | undefined> {
  const labels = host.toLowerCase().replace(/\.$/, '').split('.');
  const candidates: string[] = [];
  for (let i = 0; i <= labels.length - 2; i++) candidates.push(labels.slice(i).join('.'));
  if (candidates.length === 0) return undefined;
  const row = await db
    .selectFrom('domains')
    .select(['id', 'project_id', 'domain'])
    .where('domain', 'in', candidates)
    .where('verified', '=', true)
    .where('inbound_enabled', '=', true)
    .orderBy(sql`length(domain)`, 'desc')
    .limit(1)
    .executeTakeFirst();
  return row ? { id: row.id, projectId: row.project_id, domain: row.domain } : undefined;
}

export async function deleteDomainOfProject(db: Kysely<Database>, projectId: string, id: string): Promise<boolean> {
  if (!isUuid(id)) return false;
  const result = await db.deleteFrom('domains').where('id', '=', id).where('project_id', '=', projectId).executeTakeFirst();
  return result.numDeletedRows > 0n;
}

/**
 * One batch of domains for the background re-check, in id order after `afterId`. Domains an
 * operator verified without DNS (verified, never checked since) are left out: DNS does not
 * decide them (see markVerifiedByOperator).
 */
export async function listDomainsToCheck(
  db: Kysely<Database>,
  opts: { afterId?: string; limit: number; projectIds?: readonly string[] },
): Promise<DomainRow[]> {
  let query = db
    .selectFrom('domains')
    .selectAll()
    .where((eb) => eb.or([eb('verified', '=', false), eb('last_checked_at', 'is not', null)]))
    .orderBy('id')
    .limit(opts.limit);
  if (opts.afterId !== undefined) query = query.where('id', '>', opts.afterId);
  if (opts.projectIds !== undefined) query = query.where(sql<boolean>`project_id = any(${[...opts.projectIds]}::uuid[])`);
  return query.execute();
}

/** What a check does to a domain: `verify` may still lose to another project (see writeChecks). */
export type CheckAction = 'verify' | 'unverify' | 'keep';

export interface CheckWrite {
  id: string;
  records: DomainRecord[];
  action: CheckAction;
  /** Sets last_checked_at; false keeps an operator-verified domain's null. */
  checked: boolean;
}

const WRITE_ATTEMPTS = 3;

/**
 * Writes a batch of check results in one statement. `verify` takes effect only while no other
 * project has the domain verified (the caller never asks for two rows of one domain at once);
 * a concurrent verification elsewhere makes the statement hit the partial unique index, and the
 * retry then sees it committed. Returns the rows as written (deleted ones are absent).
 */
export async function writeChecks(db: Kysely<Database>, writes: readonly CheckWrite[]): Promise<DomainRow[]> {
  if (writes.length === 0) return [];
  for (let attempt = 1; ; attempt++) {
    try {
      return await writeChecksOnce(db, writes);
    } catch (err) {
      if (attempt >= WRITE_ATTEMPTS || !isUniqueViolation(err, VERIFIED_DOMAIN_INDEX)) throw err;
    }
  }
}

async function writeChecksOnce(db: Kysely<Database>, writes: readonly CheckWrite[]): Promise<DomainRow[]> {
  const result = await sql<DomainRow>`
    WITH input AS (
      SELECT * FROM unnest(
        ${writes.map((w) => w.id)}::uuid[],
        ${writes.map((w) => JSON.stringify(w.records))}::jsonb[],
        ${writes.map((w) => w.action)}::text[],
        ${writes.map((w) => w.checked)}::boolean[]
      ) AS i (id, records, action, checked)
    ), next AS (
      SELECT d.id, i.records, i.checked,
        CASE i.action
          WHEN 'verify' THEN d.verified OR NOT EXISTS (
            SELECT 1 FROM domains o WHERE o.domain = d.domain AND o.verified AND o.id <> d.id)
          WHEN 'unverify' THEN false
          ELSE d.verified
        END AS verified
      FROM domains d JOIN input i ON i.id = d.id
    )
    UPDATE domains d SET
      records = n.records,
      verified = n.verified,
      verified_at = CASE WHEN NOT n.verified THEN NULL WHEN d.verified THEN d.verified_at ELSE now() END,
      last_checked_at = CASE WHEN n.checked THEN now() ELSE d.last_checked_at END,
      updated_at = now()
    FROM next n
    WHERE d.id = n.id
    RETURNING d.*`.execute(db);
  return result.rows;
}

/** The key columns of a verified domain of a project (for DKIM signing). */
export async function findVerifiedDomainKey(db: Kysely<Database>, projectId: string, domain: string) {
  if (!isUuid(projectId)) return undefined;
  return db
    .selectFrom('domains')
    .select(['domain', 'dkim_selector', 'dkim_private_key'])
    .where('project_id', '=', projectId)
    .where('domain', '=', domain)
    .where('verified', '=', true)
    .executeTakeFirst();
}

/** The key of `domain` in whichever project has it verified (a domain is verified by one project at a time). */
export async function findVerifiedKeyOfDomain(db: Kysely<Database>, domain: string) {
  return db
    .selectFrom('domains')
    .select(['domain', 'dkim_selector', 'dkim_private_key'])
    .where('domain', '=', domain)
    .where('verified', '=', true)
    .orderBy('verified_at', 'desc')
    .limit(1)
    .executeTakeFirst();
}

export interface DomainClaim {
  id: string;
  projectId: string;
  projectName: string;
  verified: boolean;
}

/** Every project's row for a domain (operator CLI), oldest first. */
export async function findDomainClaims(db: Kysely<Database>, domain: string): Promise<DomainClaim[]> {
  const rows = await db
    .selectFrom('domains as d')
    .innerJoin('projects as p', 'p.id', 'd.project_id')
    .select(['d.id', 'd.project_id', 'p.name', 'd.verified'])
    .where('d.domain', '=', domain)
    .orderBy('d.created_at')
    .orderBy('d.id')
    .execute();
  return rows.map((r) => ({ id: r.id, projectId: r.project_id, projectName: r.name, verified: r.verified }));
}

/**
 * Marks a domain verified without DNS (operator CLI). last_checked_at is cleared: "verified
 * and never checked since" is how the background re-check knows DNS does not decide this
 * domain. Another project holding it verified is a 409.
 */
export async function markVerifiedByOperator(db: Kysely<Database>, id: string, domain: string): Promise<DomainRow | undefined> {
  try {
    return await db
      .updateTable('domains')
      .set({
        verified: true,
        verified_at: sql`coalesce(verified_at, now())`,
        last_checked_at: null,
        updated_at: sql`now()`,
      })
      .where('id', '=', id)
      .returningAll()
      .executeTakeFirst();
  } catch (err) {
    if (isUniqueViolation(err, VERIFIED_DOMAIN_INDEX)) throw conflict(takenMessage(domain), { domain });
    throw err;
  }
}
