import type { Task } from 'graphile-worker';
import { z } from 'zod';
import { type Delivery, SEND_BATCH_CONCURRENCY } from '../modules/emails/index.js';
import { deliverEach } from './deliver-each.js';
import { JobPriority } from './queue.js';

/** The emails one POST /v1/send batch accepted for one project (send-batches.repo.ts enqueueSendBatch). */
export const SendBatchPayload = z.object({ projectId: z.uuid(), emailIds: z.array(z.uuid()).min(1) });

/**
 * Delivers one POST /v1/send batch (docs/sending.md "Delivery batches"), SEND_BATCH_CONCURRENCY
 * at a time ({@link deliverEach}: each email's outcome is its own; a transient failure or a
 * throttle gets a send-email job of its own at transactional priority). An email already final
 * (a run again after a crash) is skipped by the delivery's own read: no query to find them first,
 * which cost as much as the job machinery it saved (docs/performance.md).
 */
export const sendBatch =
  (delivery: Delivery): Task =>
  async (payload, helpers) => {
    const { emailIds } = SendBatchPayload.parse(payload);
    await deliverEach(delivery, emailIds, helpers, { priority: JobPriority.transactional, concurrency: SEND_BATCH_CONCURRENCY });
  };
