/** The domains module's facade: what other modules, jobs, the CLI and the app import. */
export { assertVerifiedSender, isVerifiedSender } from './sender.js';
export { type DkimKey, dkimSecretBox, loadDkimKey, loadInstanceDkimKey } from './dkim-keys.js';
export { recheckDomains } from './domains.service.js';
// The operator CLI (verification without DNS).
export { type DomainClaim, findDomainClaims, markVerifiedByOperator } from './domains.repo.js';
export { parseDomainName } from './domains.schema.js';
// The inbound SMTP receiver's RCPT check (docs/bounces.md "Inbound mail").
export { findInboundDomain, type InboundDomain } from './domains.repo.js';

// Routes last: they import other modules' facades, which may import this one back (cycles
// resolve because everything above is evaluated first).
export { domainsRoutes } from './domains.routes.js';
