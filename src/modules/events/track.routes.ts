import { projectIdOf } from '../../http/auth.js';
import type { FastifyInstance, FastifyRequest } from 'fastify';
import type { ZodTypeProvider } from 'fastify-type-provider-zod';
import type { AppDeps } from '../../app-deps.js';
import { requestPath } from '../../http/idempotency.js';
import { withBodyFastPath } from '../../http/validation.js';
import { TrackBody, TrackResponse } from './events.schema.js';
import { acceptTrackBody } from './track.accept.js';
import { createTracker, isNotPerformed, type Tracker } from './track.service.js';

/** Performs one track request through `tracker` (exported for tests with a tuned tracker). */
export async function handleTrack(tracker: Tracker, request: FastifyRequest, body: TrackBody): Promise<TrackResponse> {
  const idem = request.idempotency;
  try {
    const data = await tracker.track({
      projectId: projectIdOf(request),
      ...body,
      idempotency: idem && { key: idem.key, method: request.method, path: requestPath(request) },
    });
    // Claimed in the batch's transaction: the onSend fallback must not record it again.
    if (idem) idem.claimed = true;
    return { success: true, data };
  } catch (err) {
    // Never performed (overload, shutdown): leave the key free for the retry the 503 asks for.
    if (isNotPerformed(err)) request.idempotency = undefined;
    throw err;
  }
}

/**
 * The 200 answer, written field by field (the handler builds it: nothing else can be in it).
 * The zod serializer parsed it against TrackResponse before stringifying it: ~2 % of the API's
 * CPU at /v1/track's rate (docs/performance.md). The schema stays the route's documented answer.
 */
export const serializeTrackAnswer = ({ data }: TrackResponse): string =>
  JSON.stringify({ success: true, data: { contact: data.contact, event: data.event, timestamp: data.timestamp } });

/**
 * POST /v1/track (public key) and its dashboard alias POST /events/track (secret key or
 * session). Both share one per-process group-commit batcher, drained when the app closes.
 */
export async function trackRoutes(app: FastifyInstance, deps: AppDeps): Promise<void> {
  // The batches' statements on generic-plan connections (AppDeps.hotDb): planned once, not per batch.
  const tracker = createTracker(deps.hotDb ?? deps.db, {
    ttlHours: deps.config.idempotencyTtlHours,
    batch: {
      onBatchError: (err, info) => app.log.warn({ err, ...info }, 'track batch failed; retrying its calls one by one'),
      onBatch: (info) => app.log.debug(info, 'track batch committed'),
    },
  });
  app.addHook('onClose', async () => tracker.close());

  const r = app.withTypeProvider<ZodTypeProvider>();
  const description =
    'Records an event for a contact, creating or updating the contact. Every call records a new event unless an Idempotency-Key repeats. Answers once the event is committed.';

  r.post('/v1/track', {
    config: { auth: 'public', idempotent: true },
    serializerCompiler: () => serializeTrackAnswer,
    validatorCompiler: withBodyFastPath(acceptTrackBody),
    schema: { tags: ['Events'], summary: 'Track an event (public key)', description, body: TrackBody, response: { 200: TrackResponse } },
    handler: (request) => handleTrack(tracker, request, request.body),
  });

  r.post('/events/track', {
    config: { idempotent: true },
    serializerCompiler: () => serializeTrackAnswer,
    validatorCompiler: withBodyFastPath(acceptTrackBody),
    schema: { tags: ['Events'], summary: 'Track an event from the dashboard (secret key)', description, body: TrackBody, response: { 200: TrackResponse } },
    handler: (request) => handleTrack(tracker, request, request.body),
  });
}
