import { type DomainClaim, findDomainClaims, markVerifiedByOperator, parseDomainName } from '../../modules/domains/index.js';
import { defineCommand } from '../command.js';
import { CliError, optional, required } from '../flags.js';
import { clean } from '../io.js';

const describeClaim = (c: DomainClaim) => `${c.projectId} (${clean(c.projectName)})`;

/** The one project's row the operator means: --project, else the only project that added it. */
function chooseClaim(domain: string, claims: DomainClaim[], projectId: string | undefined): DomainClaim {
  const add = 'add it with POST /domains (or in the dashboard) first';
  if (projectId !== undefined) {
    const claim = claims.find((c) => c.projectId === projectId.toLowerCase());
    if (!claim) throw new CliError(`project ${projectId} has not added ${domain}: ${add}`);
    return claim;
  }
  const [only, ...others] = claims;
  if (!only) throw new CliError(`no project has added ${domain}: ${add}`);
  if (others.length > 0) {
    throw new CliError(`${domain} was added by ${claims.length} projects (${claims.map(describeClaim).join(', ')}): choose one with --project`);
  }
  return only;
}

export const verifyDomain = defineCommand({
  name: 'verify-domain',
  summary: 'Mark a sender domain verified without a DNS check (background DNS checks then leave it verified)',
  flags: {
    domain: required('DOMAIN', 'the domain, as added with POST /domains'),
    project: optional('PROJECT_ID', 'the project (required when several projects added the domain)'),
  },
  async run({ db, flags, print }) {
    const parsed = parseDomainName(flags.domain);
    if (!parsed.ok) throw new CliError(`--domain: ${parsed.message}`);
    const domain = parsed.domain;
    const claims = await findDomainClaims(db, domain);
    const claim = chooseClaim(domain, claims, flags.project?.trim());
    const holder = claims.find((c) => c.verified && c.id !== claim.id);
    if (holder) {
      throw new CliError(`${domain} is already verified by project ${describeClaim(holder)}; a domain is verified by one project at a time`);
    }
    const row = await markVerifiedByOperator(db, claim.id, domain);
    if (!row) throw new CliError(`${domain} was removed from project ${claim.projectId} meanwhile`);
    print(`operator: marked ${domain} verified for project ${describeClaim(claim)} without a DNS check${claim.verified ? ' (it was verified already)' : ''}`);
  },
});
