import { readFileSync } from 'node:fs';
import type { Kysely } from 'kysely';
import type { Config } from '../../config.js';
import type { Database } from '../../db/schema.js';
import type { InboundReceiver, ReceiverOptions } from './receiver.js';
import { createVerp } from './verp.js';

/**
 * The envelope sender of each email (delivery): its VERP return path when BOUNCE_DOMAIN is set,
 * else undefined (the envelope sender stays the From).
 */
export function returnPathsOf(config: Pick<Config, 'secret' | 'bounceDomain'>): ((emailId: string) => string) | undefined {
  if (!config.bounceDomain) return undefined;
  const verp = createVerp(config.secret, config.bounceDomain);
  return (emailId) => verp.address(emailId);
}

/**
 * Starts an inbound SMTP receiver (receiver.ts). The SMTP server package is loaded here, not at
 * start: most processes never run a receiver (docs/performance.md "Memory").
 */
export async function startInboundReceiver(opts: ReceiverOptions): Promise<InboundReceiver> {
  const receiver = await import('./receiver.js');
  return receiver.startInboundReceiver(opts);
}

/** Starts the receiver INBOUND_SMTP_* describes, or nothing when INBOUND_SMTP_PORT is unset. */
export async function startConfiguredReceiver(config: Config, db: Kysely<Database>, log: ReceiverOptions['log']): Promise<InboundReceiver | undefined> {
  const inbound = config.inboundSmtp;
  if (!inbound || !config.bounceDomain) return undefined;
  const tls = inbound.tls ? { cert: readFileSync(inbound.tls.certFile), key: readFileSync(inbound.tls.keyFile) } : undefined;
  return startInboundReceiver({
    db,
    verp: createVerp(config.secret, config.bounceDomain),
    log,
    port: inbound.port,
    host: inbound.host,
    tls,
    maxSizeBytes: inbound.maxSizeBytes,
    messagesPerMinute: inbound.messagesPerMinute,
    connectionsPerMinute: inbound.connectionsPerMinute,
    autoDisable: config.autoDisableProjects,
    ...(inbound.storeAttachments && { attachments: { config } }),
  });
}
