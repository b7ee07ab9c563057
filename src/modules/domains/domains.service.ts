import type { Kysely } from 'kysely';
import type { Database, DomainRecord, DomainRow } from '../../db/schema.js';
import { conflict, notFound } from '../../http/errors.js';
import type { Dns } from '../../lib/dns.js';
import type { SecretBox } from '../../lib/secret-box.js';
import { generateDkimKey, newDkimSelector } from './dkim-keys.js';
import {
  type CheckWrite,
  deleteDomainOfProject,
  domainExists,
  findDomainByName,
  findDomainOfProject,
  insertDomain,
  isVerifiedElsewhere,
  listDomainsOfProject,
  listDomainsToCheck,
  rowToDomain,
  setInboundEnabled,
  takenMessage,
  writeChecks,
} from './domains.repo.js';
import type { Domain } from './domains.schema.js';
import { checkDomainRecords, type DomainCheck, expectedRecords, mapWithConcurrency, RecordError } from './verification.js';

/** A log line about a domain's state; routes and jobs adapt their own logger. */
export type DomainLog = (message: string, meta: Record<string, unknown>) => void;

export async function addDomain(db: Kysely<Database>, box: SecretBox, projectId: string, domain: string): Promise<Domain> {
  if (await findDomainByName(db, projectId, domain)) throw domainExists(domain);
  if (await isVerifiedElsewhere(db, domain, projectId)) throw conflict(takenMessage(domain), { domain });
  const key = await generateDkimKey();
  const selector = newDkimSelector();
  const row = await insertDomain(db, {
    projectId,
    domain,
    selector,
    publicKey: key.publicKey,
    sealedPrivateKey: box.seal(key.privateKeyPem),
    records: expectedRecords({ domain, selector, publicKey: key.publicKey }),
  });
  return rowToDomain(row);
}

/** GET /domains/project/:projectId: only the caller's own project exists for it. */
export async function listProjectDomains(db: Kysely<Database>, callerProjectId: string, projectId: string): Promise<Domain[]> {
  if (projectId.toLowerCase() !== callerProjectId.toLowerCase()) throw notFound('Project');
  return (await listDomainsOfProject(db, callerProjectId)).map(rowToDomain);
}

export async function removeDomain(db: Kysely<Database>, projectId: string, id: string): Promise<void> {
  if (!(await deleteDomainOfProject(db, projectId, id))) throw notFound('Domain');
}

/** PATCH /domains/:id: the inbound flag (docs/bounces.md "Inbound mail"); another project's domain is a 404. */
export async function updateDomain(db: Kysely<Database>, projectId: string, id: string, body: { inboundEnabled: boolean }): Promise<Domain> {
  const row = await setInboundEnabled(db, projectId, id, body.inboundEnabled);
  if (!row) throw notFound('Domain');
  return rowToDomain(row);
}

const checkTarget = (row: DomainRow) => ({ domain: row.domain, selector: row.dkim_selector, publicKey: row.dkim_public_key });

/** Verified and never DNS-checked since: an operator verified it (repo markVerifiedByOperator). */
const isOperatorVerified = (row: DomainRow) => row.verified && row.last_checked_at === null;

export type DomainChange = 'verified' | 'unverified';

interface Applied {
  before: DomainRow;
  row: DomainRow;
  change: DomainChange | undefined;
  /** The DKIM record is published but another project has the domain verified. */
  conflict: boolean;
}

const dkimError = (row: DomainRow) => row.records.find((r) => r.purpose === 'DKIM')?.error;

const withConflict = (records: DomainRecord[]): DomainRecord[] =>
  records.map((r) => (r.purpose === 'DKIM' ? { ...r, verified: false, error: RecordError.takenByAnotherProject } : r));

/**
 * The re-check policy, for a batch of checked domains (in id order):
 * - DKIM published exactly → verified, unless another project holds the domain (a conflict, which
 *   the DKIM record reports); of two pending rows of one domain in a batch, the older is tried;
 * - DKIM missing or different → not verified;
 * - lookup error (timeout, SERVFAIL) → state unchanged: an outage never un-verifies;
 * - an operator-verified domain stays verified whatever DNS says (records are still reported).
 */
async function applyChecks(db: Kysely<Database>, checked: readonly { row: DomainRow; check: DomainCheck }[]): Promise<Applied[]> {
  const claimed = new Set<string>();
  const conflictIds = new Set<string>();
  const writes = checked.map(({ row, check }): CheckWrite => {
    const { records, dkim } = check;
    if (isOperatorVerified(row) && dkim !== 'verified') return { id: row.id, records, action: 'keep', checked: false };
    if (dkim === 'verified' && !row.verified && claimed.has(row.domain)) {
      conflictIds.add(row.id);
      return { id: row.id, records: withConflict(records), action: 'keep', checked: true };
    }
    if (dkim === 'verified') claimed.add(row.domain);
    const action = dkim === 'verified' ? 'verify' : dkim === 'error' ? 'keep' : 'unverify';
    return { id: row.id, records, action, checked: true };
  });
  const written = new Map((await writeChecks(db, writes)).map((row) => [row.id, row]));

  // Refused because another project has the domain verified: say so on the DKIM record.
  const refused = writes.filter((w) => w.action === 'verify' && written.get(w.id)?.verified === false);
  const rewrites = refused.map((w): CheckWrite => ({ ...w, records: withConflict(w.records), action: 'keep' }));
  for (const row of await writeChecks(db, rewrites)) written.set(row.id, row);
  for (const w of refused) conflictIds.add(w.id);

  return checked.flatMap(({ row: before }) => {
    const row = written.get(before.id);
    if (!row) return []; // deleted meanwhile
    const change = row.verified === before.verified ? undefined : row.verified ? 'verified' : 'unverified';
    return [{ before, row, change, conflict: conflictIds.has(row.id) }];
  });
}

function logChange(log: DomainLog | undefined, { before, row, change, conflict }: Applied): void {
  if (!log) return;
  const reason = dkimError(row);
  const meta = { domainId: row.id, projectId: row.project_id, domain: row.domain, ...(reason && { reason }) };
  if (change === 'verified') log(`domain ${row.domain} verified`, meta);
  else if (change === 'unverified') log(`domain ${row.domain} no longer verified: DKIM ${reason ?? 'record changed'}`, meta);
  // A conflict is logged once, not at every re-check.
  else if (conflict && dkimError(before) !== RecordError.takenByAnotherProject) {
    log(`domain ${row.domain} not verified: already verified by another project`, meta);
  }
}

/** GET /domains/:id/verify: checks DNS now and records the outcome; a domain verified elsewhere is a 409. */
export async function verifyDomainNow(
  deps: { db: Kysely<Database>; dns: Dns },
  input: { projectId: string; id: string; log?: DomainLog },
): Promise<Domain> {
  const row = await findDomainOfProject(deps.db, input.projectId, input.id);
  if (!row) throw notFound('Domain');
  const check = await checkDomainRecords(deps.dns, checkTarget(row));
  const [applied] = await applyChecks(deps.db, [{ row, check }]);
  if (!applied) throw notFound('Domain');
  logChange(input.log, applied);
  if (applied.conflict) throw conflict(takenMessage(row.domain), { domain: row.domain });
  return rowToDomain(applied.row);
}

/** Options of {@link recheckDomains}. */
export interface RecheckOptions {
  /** Domains read and written per statement. Default 100. */
  batchSize?: number;
  /** Domains looked up at once (three TXT lookups each). Default 5. */
  concurrency?: number;
  /** Only these projects' domains (default: every project's). */
  projectIds?: readonly string[];
  /** Stops between batches (worker shutdown); the next run starts over. */
  signal?: AbortSignal;
  log?: DomainLog;
}

export interface RecheckSummary {
  checked: number;
  verified: number;
  unverified: number;
  conflicts: number;
}

/** The background re-check (cron): every domain but the operator-verified ones, batch by batch. */
export async function recheckDomains(deps: { db: Kysely<Database>; dns: Dns }, opts: RecheckOptions = {}): Promise<RecheckSummary> {
  const batchSize = opts.batchSize ?? 100;
  const summary: RecheckSummary = { checked: 0, verified: 0, unverified: 0, conflicts: 0 };
  let afterId: string | undefined;
  while (!opts.signal?.aborted) {
    const rows = await listDomainsToCheck(deps.db, { afterId, limit: batchSize, projectIds: opts.projectIds });
    if (rows.length === 0) break;
    const checked = await mapWithConcurrency(rows, opts.concurrency ?? 5, async (row) => ({
      row,
      check: await checkDomainRecords(deps.dns, checkTarget(row)),
    }));
    const applied = await applyChecks(deps.db, checked);
    summary.checked += rows.length;
    for (const item of applied) {
      logChange(opts.log, item);
      if (item.change === 'verified') summary.verified++;
      else if (item.change === 'unverified') summary.unverified++;
      if (item.conflict) summary.conflicts++;
    }
    afterId = rows.at(-1)?.id;
    if (rows.length < batchSize) break;
  }
  return summary;
}
