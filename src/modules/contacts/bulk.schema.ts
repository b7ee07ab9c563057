import { z } from 'zod';
import { JOB_STATUSES } from '../../db/schema.js';

/** Contact ids per bulk call (SPEC Limits). */
export const MAX_BULK_IDS = 1000;

export const BulkBody = z.object({
  contactIds: z
    .array(z.uuid())
    .min(1)
    .max(MAX_BULK_IDS)
    .describe(`1 to ${MAX_BULK_IDS} contact ids; ids of other projects or unknown ids are reported as failed rows`),
});
export type BulkBody = z.infer<typeof BulkBody>;

export const JobAccepted = z.object({ jobId: z.uuid().describe('Poll the job status with this id') });

export const JobIdParams = z.object({ jobId: z.string() });

export const JobRowError = z.object({
  row: z.number().int().describe('Bulk: index in contactIds (from 0). Import: data row number (from 1; 0 = the file as a whole)'),
  message: z.string(),
});

export const JobStatusBody = z.object({
  id: z.uuid(),
  kind: z.string().describe('bulk-subscribe, bulk-unsubscribe, bulk-delete, field-delete or import'),
  status: z.enum(JOB_STATUSES),
  total: z.number().int(),
  processed: z.number().int(),
  failed: z.number().int(),
  errors: z.array(JobRowError).describe('The first 1,000 row errors'),
  createdAt: z.iso.datetime(),
  updatedAt: z.iso.datetime(),
});
