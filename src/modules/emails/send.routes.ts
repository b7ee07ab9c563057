import type { FastifyInstance } from 'fastify';
import type { ZodTypeProvider } from 'fastify-type-provider-zod';
import type { AppDeps } from '../../app-deps.js';
import { ApiError, ErrorCode } from '../../http/errors.js';
import { requestPath } from '../../http/idempotency.js';
import { withBodyFastPath } from '../../http/validation.js';
import { acceptSendBody } from './send.accept.js';
import { SEND_BODY_LIMIT, SendBody, SendResponse } from './send.schema.js';
import { createSender, isNotPerformed } from './send.service.js';

/**
 * The 200 answer written field by field (what the zod serializer would keep of it, without
 * checking the ids and timestamp it was just given: they come from the service).
 */
export const serializeSendAnswer = ({ data }: SendResponse): string =>
  JSON.stringify({
    success: true,
    data: { emails: data.emails.map((e) => ({ contact: { id: e.contact.id, email: e.contact.email }, email: e.email })), timestamp: data.timestamp },
  });

/** POST /v1/send (secret key): answers once every email and its job are committed. */
export async function sendRoutes(app: FastifyInstance, deps: AppDeps): Promise<void> {
  const sender = createSender({
    db: deps.db,
    hotDb: deps.hotDb,
    tokens: deps.tokens,
    publicUrl: deps.config.publicUrl,
    idempotencyTtlHours: deps.config.idempotencyTtlHours,
    billing: deps.config.billing,
  });
  app.addHook('onClose', async () => sender.close());

  const r = app.withTypeProvider<ZodTypeProvider>();
  r.post('/v1/send', {
    bodyLimit: SEND_BODY_LIMIT,
    config: { idempotent: true },
    validatorCompiler: withBodyFastPath(acceptSendBody),
    serializerCompiler: () => serializeSendAnswer,
    schema: {
      tags: ['Sending'],
      summary: 'Send an email to one or more recipients (secret key)',
      description:
        'Each recipient gets its own contact upsert, rendering and email. Answers 200 once the emails and their delivery jobs are committed; delivery follows in the background.',
      body: SendBody,
      response: { 200: SendResponse },
    },
    handler: async (request) => {
      const project = request.project;
      if (!project) throw new ApiError(401, ErrorCode.UNAUTHORIZED, 'Missing API key');
      const idem = request.idempotency;
      try {
        const data = await sender.send({
          projectId: project.id,
          tracking: project.tracking,
          body: request.body,
          idempotency: idem && { key: idem.key, method: request.method, path: requestPath(request) },
        });
        // Claimed in the batch's transaction: the onSend fallback must not record it again.
        if (idem) idem.claimed = true;
        return { success: true as const, data };
      } catch (err) {
        // Never performed (overload, shutdown): leave the key free for the retry the 503 asks for.
        if (isNotPerformed(err)) request.idempotency = undefined;
        throw err;
      }
    },
  });
}
