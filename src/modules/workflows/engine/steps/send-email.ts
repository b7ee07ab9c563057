import { emptyResults, type StepHandler } from '../types.js';

/** SEND_EMAIL: waits for the emails module's facade (queueTemplateEmail). */
export const sendEmail: StepHandler = async (_ctx, rows) => ({
  ...emptyResults(),
  failed: rows.map((row) => ({ row, error: 'SEND_EMAIL is not available yet' })),
});
