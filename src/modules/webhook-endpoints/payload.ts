import { randomBytes } from 'node:crypto';
import { createSecretBox, type SecretBox } from '../../lib/secret-box.js';

/**
 * The JSON text of one call (DESIGN §10): `{id, type, createdAt, data}`. Built from the stored
 * row on every attempt: the same row gives the same text, so a retry carries the same body and
 * the same X-Webhook-Id (only the signature's timestamp changes).
 */
export function payloadBody(e: { event_id: string; event_type: string; event_at: Date; data: unknown }): string {
  return JSON.stringify({ id: e.event_id, type: e.event_type, createdAt: e.event_at.toISOString(), data: e.data });
}

/** A new endpoint secret: `whsec_` and 64 hex characters (the form of the project webhook secret). */
export const generateEndpointSecret = (): string => `whsec_${randomBytes(32).toString('hex')}`;

/** Seals endpoint secrets at rest with a key derived from SECRET (purpose `webhook-endpoint`). */
export const endpointSecretBox = (secret: string): SecretBox => createSecretBox(secret, 'webhook-endpoint');

/** The secret, or an Error saying why it cannot be opened (SECRET changed since it was sealed). */
export function openSecret(box: SecretBox, sealed: string): string | Error {
  try {
    return box.open(sealed);
  } catch {
    return new Error('the endpoint secret cannot be opened (was SECRET changed?): rotate it with POST /webhook-endpoints/:id/rotate-secret');
  }
}
