import { z } from 'zod';
import { EXECUTION_STATUSES, STEP_EXECUTION_STATUSES, WORKFLOW_BRANCHES, WORKFLOW_STEP_TYPES } from '../../db/schema.js';
import { pageOf, pageQueryFields } from '../../http/paging.js';

const Json = z.record(z.string(), z.unknown());

export const WorkflowExecution = z
  .object({
    id: z.uuid(),
    workflowId: z.uuid(),
    contactId: z.uuid(),
    contact: z.object({ id: z.uuid(), email: z.string() }),
    status: z.enum(EXECUTION_STATUSES).describe('RUNNING and WAITING are active'),
    currentStepId: z.uuid().nullable(),
    context: Json.describe('Per-execution variables of a manual start (templates: {{context.key}} and {{key}})'),
    event: Json.describe("The trigger event's data, merged with the data of events that resumed waits"),
    error: z.string().nullable(),
    exitReason: z.string().nullable(),
    startedAt: z.iso.datetime(),
    completedAt: z.iso.datetime().nullable(),
    updatedAt: z.iso.datetime(),
  })
  .meta({ id: 'WorkflowExecution' });
export type WorkflowExecution = z.infer<typeof WorkflowExecution>;

export const WorkflowStepExecution = z
  .object({
    id: z.uuid().describe('Also the X-Webhook-Id of a WEBHOOK step'),
    stepId: z.uuid(),
    stepType: z.enum(WORKFLOW_STEP_TYPES),
    stepName: z.string(),
    status: z.enum(STEP_EXECUTION_STATUSES),
    branch: z.enum(WORKFLOW_BRANCHES).nullable(),
    output: Json.nullable().describe('What the step did: e.g. {emailId, outcome} for SEND_EMAIL, {status, bodyExcerpt} for WEBHOOK, {result} for CONDITION'),
    error: z.string().nullable(),
    attempts: z.int(),
    dueAt: z.iso.datetime().nullable().describe('DELAY end or WAIT_FOR_EVENT timeout'),
    startedAt: z.iso.datetime().nullable(),
    completedAt: z.iso.datetime().nullable(),
  })
  .meta({ id: 'WorkflowStepExecution' });
export type WorkflowStepExecution = z.infer<typeof WorkflowStepExecution>;

export const WorkflowExecutionDetail = WorkflowExecution.extend({
  steps: z.array(WorkflowStepExecution).describe('Timeline, oldest first'),
}).meta({ id: 'WorkflowExecutionDetail' });
export type WorkflowExecutionDetail = z.infer<typeof WorkflowExecutionDetail>;

export const StartExecutionBody = z
  .object({
    contactId: z.string().optional().describe('An existing contact of the project (404 otherwise)'),
    email: z.string().max(254).optional().describe('An existing contact by address (404 otherwise)'),
    context: Json.optional(),
  })
  .refine((b) => (b.contactId === undefined) !== (b.email === undefined), { message: 'Give exactly one of contactId or email', path: ['contactId'] })
  .meta({ id: 'StartWorkflowExecution' });
export type StartExecutionBody = z.infer<typeof StartExecutionBody>;

export const ListExecutionsQuery = z.object({
  ...pageQueryFields,
  // Checked by the service: an unrecognised value is a 400, as for campaigns.
  status: z.string().optional().describe(`One of ${EXECUTION_STATUSES.join(', ')}; another value is 400`),
});
export type ListExecutionsQuery = z.infer<typeof ListExecutionsQuery>;

export const WorkflowExecutionList = pageOf(WorkflowExecution);
export type WorkflowExecutionList = z.infer<typeof WorkflowExecutionList>;

export const ExecutionParams = z.object({ id: z.string(), executionId: z.string() });
export const CancelAllResult = z.object({ cancelled: z.int().describe('Executions cancelled') });
