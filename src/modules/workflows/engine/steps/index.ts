import type { WorkflowStepType } from '../../../../db/schema.js';
import type { StepHandler } from '../types.js';
import { condition } from './condition.js';
import { delay } from './delay.js';
import { exit, trigger } from './exit.js';
import { sendEmail } from './send-email.js';
import { updateContact } from './update-contact.js';
import { waitForEvent } from './wait-for-event.js';
import { webhook } from './webhook.js';

/** One handler per step type. */
export const handlers: Record<WorkflowStepType, StepHandler> = {
  TRIGGER: trigger,
  SEND_EMAIL: sendEmail,
  DELAY: delay,
  WAIT_FOR_EVENT: waitForEvent,
  CONDITION: condition,
  WEBHOOK: webhook,
  UPDATE_CONTACT: updateContact,
  EXIT: exit,
};
