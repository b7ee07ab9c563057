import { generateKeyPair, randomBytes } from 'node:crypto';
import { promisify } from 'node:util';
import type { Kysely } from 'kysely';
import type { Database } from '../../db/schema.js';
import { createSecretBox, type SecretBox } from '../../lib/secret-box.js';
import { findVerifiedDomainKey, findVerifiedKeyOfDomain } from './domains.repo.js';

const generateRsaKeyPair = promisify(generateKeyPair);

/** The secret box sealing DKIM private keys at rest (purpose `dkim` of SECRET). */
export const dkimSecretBox = (secret: string): SecretBox => createSecretBox(secret, 'dkim');

export interface GeneratedDkimKey {
  /** Base64 of the DER SubjectPublicKeyInfo: the `p=` tag of the DKIM record. */
  publicKey: string;
  /** PKCS#8 PEM. Seal it before it is stored. */
  privateKeyPem: string;
}

/** A fresh RSA-2048 key pair, generated off the event loop. */
export async function generateDkimKey(): Promise<GeneratedDkimKey> {
  const { publicKey, privateKey } = await generateRsaKeyPair('rsa', {
    modulusLength: 2048,
    publicKeyEncoding: { type: 'spki', format: 'der' },
    privateKeyEncoding: { type: 'pkcs8', format: 'pem' },
  });
  return { publicKey: publicKey.toString('base64'), privateKeyPem: privateKey };
}

/**
 * `mp<yyyymm>-<6 hex>`, e.g. `mp202501-3fa9c1`: the month tells an operator how old a key is
 * (and leaves room to rotate), the random part keeps two projects adding the same domain (or a
 * domain removed and added again) from asking for the same DNS name with different keys.
 */
export function newDkimSelector(now = new Date()): string {
  const month = `${now.getUTCFullYear()}${String(now.getUTCMonth() + 1).padStart(2, '0')}`;
  return `mp${month}-${randomBytes(3).toString('hex')}`;
}

/** The DKIM key of a verified sender domain, named as nodemailer's `dkim` option names it. */
export interface DkimKey {
  domainName: string;
  keySelector: string;
  /** PKCS#8 PEM. */
  privateKey: string;
}

/**
 * The signing key for mail from `fromDomain` (a domain, not an address) sent by a project;
 * undefined unless that project has the domain verified.
 */
export async function loadDkimKey(
  db: Kysely<Database>,
  secretBox: SecretBox,
  projectId: string,
  fromDomain: string,
): Promise<DkimKey | undefined> {
  const domain = fromDomain.trim().toLowerCase().replace(/\.$/, '');
  const row = await findVerifiedDomainKey(db, projectId, domain);
  if (!row) return undefined;
  return { domainName: row.domain, keySelector: row.dkim_selector, privateKey: secretBox.open(row.dkim_private_key) };
}

/**
 * The signing key of the instance's own mail (SYSTEM_FROM's domain): the domain's key in the
 * project that has it verified (an operator's project: docs/accounts.md "Account emails");
 * undefined when no project has it verified.
 */
export async function loadInstanceDkimKey(db: Kysely<Database>, secretBox: SecretBox, fromDomain: string): Promise<DkimKey | undefined> {
  const row = await findVerifiedKeyOfDomain(db, fromDomain.trim().toLowerCase().replace(/\.$/, ''));
  if (!row) return undefined;
  return { domainName: row.domain, keySelector: row.dkim_selector, privateKey: secretBox.open(row.dkim_private_key) };
}
