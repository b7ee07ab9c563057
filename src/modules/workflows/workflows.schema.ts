import { z } from 'zod';
import { WORKFLOW_BRANCHES, WORKFLOW_STEP_TYPES } from '../../db/schema.js';
import { pageOf, pageQueryFields } from '../../http/paging.js';
import { WorkflowEventName } from './event-name.js';

/** Step configs are checked by the service against their type's schema (steps.schema.ts): 422 naming `config.<key>`. */
const StepConfigInput = z.record(z.string(), z.unknown());
const CONFIG_DOC =
  'SEND_EMAIL {templateId, recipient?: {type: CONTACT|CUSTOM, customEmail?}}; DELAY {amount > 0, unit: minutes|hours|days} (<= 365 days); ' +
  'WAIT_FOR_EVENT {eventName, timeout?: seconds (<= 1 year)}; CONDITION {field, operator, value?, unit?} or {condition: tree} (fields also event.<key>, context.<key>); ' +
  'WEBHOOK {url, method?: GET|POST|PUT|PATCH|DELETE (default POST), headers?, body?}; UPDATE_CONTACT {updates?, subscribed? | subscriptionAction?: none|subscribe|unsubscribe}; EXIT {reason?}';

export const WORKFLOW_LIMITS = { name: 200, description: 1000, stepName: 200, search: 200 } as const;
export const WORKFLOW_SORTS = ['createdAt', 'name', 'updatedAt'] as const;
export type WorkflowSort = (typeof WORKFLOW_SORTS)[number];
export const WORKFLOW_STATUS_FILTERS = ['active', 'disabled'] as const;
/** Step types POST /workflows/:id/steps accepts (TRIGGER comes with the workflow). */
export const ADDABLE_STEP_TYPES = WORKFLOW_STEP_TYPES.filter((t) => t !== 'TRIGGER');

const noNul = (s: string) => !s.includes('\u0000');
const text = (max: number) => z.string().max(max).refine(noNul, { message: 'Must not contain NUL characters', params: { code: 'invalid_string' } });
const name = () => text(WORKFLOW_LIMITS.name).trim().min(1);

export const TriggerConfig = z.strictObject({ eventName: WorkflowEventName });

export const Workflow = z
  .object({
    id: z.uuid(),
    name: z.string(),
    description: z.string(),
    triggerType: z.literal('EVENT'),
    triggerConfig: z.object({ eventName: z.string() }),
    enabled: z.boolean(),
    allowReentry: z.boolean().describe('false: at most one execution ever per contact'),
    createdAt: z.iso.datetime(),
    updatedAt: z.iso.datetime(),
  })
  .meta({ id: 'Workflow' });
export type Workflow = z.infer<typeof Workflow>;

export const WorkflowListItem = Workflow.extend({
  stepCount: z.int().describe('Steps, the TRIGGER included'),
  executionCount: z.int().describe('Executions ever started'),
  activeExecutionCount: z.int().describe('Executions RUNNING or WAITING'),
}).meta({ id: 'WorkflowListItem' });
export type WorkflowListItem = z.infer<typeof WorkflowListItem>;

export const WorkflowList = pageOf(WorkflowListItem);
export type WorkflowList = z.infer<typeof WorkflowList>;

export const Position = z.object({ x: z.number().min(-1e7).max(1e7), y: z.number().min(-1e7).max(1e7) });

export const StepStats = z
  .object({
    entered: z.int().describe('Step executions (visits) of the step'),
    completed: z.int().describe('COMPLETED or SKIPPED (a step passed over counts as done)'),
    waiting: z.int().describe('PENDING, WAITING or RUNNING'),
    failed: z.int(),
    sent: z.int().optional().describe('SEND_EMAIL: emails accepted by the relay (or further)'),
    delivered: z.int().optional(),
    opened: z.int().optional(),
    clicked: z.int().optional(),
    bounced: z.int().optional(),
  })
  .meta({ id: 'WorkflowStepStats' });
export type StepStats = z.infer<typeof StepStats>;

export const Step = z
  .object({
    id: z.uuid(),
    type: z.enum(WORKFLOW_STEP_TYPES),
    name: z.string(),
    config: z.record(z.string(), z.unknown()).describe('Per step type: see the *Config schemas (DESIGN §9)'),
    position: Position,
    template: z
      .object({ id: z.uuid(), name: z.string(), subject: z.string(), type: z.string() })
      .nullable()
      .optional()
      .describe('SEND_EMAIL: the template (null if it is gone)'),
    createdAt: z.iso.datetime(),
    updatedAt: z.iso.datetime(),
  })
  .meta({ id: 'WorkflowStep' });
export type Step = z.infer<typeof Step>;

export const StepWithStats = Step.extend({ stats: StepStats }).meta({ id: 'WorkflowStepWithStats' });
export type StepWithStats = z.infer<typeof StepWithStats>;

export const Transition = z
  .object({ id: z.uuid(), fromStepId: z.uuid(), toStepId: z.uuid(), branch: z.enum(WORKFLOW_BRANCHES).nullable() })
  .meta({ id: 'WorkflowTransition' });
export type Transition = z.infer<typeof Transition>;

export const WorkflowDetail = Workflow.extend({ steps: z.array(StepWithStats), transitions: z.array(Transition) }).meta({ id: 'WorkflowDetail' });
export type WorkflowDetail = z.infer<typeof WorkflowDetail>;

export const CreateWorkflowBody = z.object({
  name: name(),
  description: text(WORKFLOW_LIMITS.description).optional(),
  eventName: WorkflowEventName.describe('The trigger event'),
  allowReentry: z.boolean().optional().describe('Default false'),
});
export type CreateWorkflowBody = z.infer<typeof CreateWorkflowBody>;

export const UpdateWorkflowBody = z.object({
  name: name().optional(),
  description: text(WORKFLOW_LIMITS.description).optional(),
  enabled: z.boolean().optional().describe('Enabling checks the graph is runnable (422 naming the step otherwise)'),
  allowReentry: z.boolean().optional(),
  triggerType: z.literal('EVENT').optional().describe('EVENT only'),
  triggerConfig: TriggerConfig.optional().describe('409 on an enabled workflow with active executions'),
});
export type UpdateWorkflowBody = z.infer<typeof UpdateWorkflowBody>;

export const ListWorkflowsQuery = z.object({
  ...pageQueryFields,
  search: z.string().max(WORKFLOW_LIMITS.search).optional().describe('Case-insensitive substring of name or description'),
  // Checked by the service: an unrecognised value is a 400, as on GET /campaigns.
  status: z.string().optional().describe(`One of ${WORKFLOW_STATUS_FILTERS.join(', ')} (active: enabled; disabled: not enabled); another value is 400`),
  sort: z.enum(WORKFLOW_SORTS).catch('createdAt').default('createdAt').describe('Unrecognised values fall back to createdAt'),
  dir: z.enum(['asc', 'desc']).catch('desc').default('desc').describe('Unrecognised values fall back to desc'),
});
export type ListWorkflowsQuery = z.infer<typeof ListWorkflowsQuery>;

export const WorkflowIdParams = z.object({ id: z.string() });
export const StepParams = z.object({ id: z.string(), stepId: z.string() });
export const TransitionParams = z.object({ id: z.string(), transitionId: z.string() });

export const AddStepBody = z.object({
  type: z.enum(ADDABLE_STEP_TYPES).describe('TRIGGER is created with the workflow and cannot be added'),
  name: text(WORKFLOW_LIMITS.stepName).optional(),
  // Checked by the service against the type's schema (422 naming config.<field>).
  config: StepConfigInput.optional().describe(`The type's config (default {}). ${CONFIG_DOC}`),
  position: Position.optional().describe('Default: below the lowest step'),
  insert: z
    .object({ transitionId: z.string().describe('A transition of this workflow (404 when it is gone)') })
    .optional()
    .describe(
      "Put the new step on this transition, in the same transaction: the transition's source links to the new step with the transition's branch, " +
        "the new step to the transition's target with its first output (yes for CONDITION, event for WAIT_FOR_EVENT, none otherwise; EXIT cannot go between two steps: 422 type)",
    ),
  after: z
    .object({
      stepId: z.string().describe('A step of this workflow (422 after.stepId otherwise)'),
      branch: z.enum(WORKFLOW_BRANCHES).nullable().optional().describe("The step's output: yes/no from CONDITION, event/timeout from WAIT_FOR_EVENT, none otherwise"),
    })
    .optional()
    .describe('Link the new step from this step\'s output, in the same transaction (409 when that output already has a transition; other rules: 422 after.stepId / after.branch)'),
});
export type AddStepBody = z.infer<typeof AddStepBody>;

export const AddedStep = Step.extend({
  transitions: z.array(Transition).optional().describe('With insert or after: the transitions the call created (the replaced one is deleted)'),
}).meta({ id: 'WorkflowAddedStep' });
export type AddedStep = z.infer<typeof AddedStep>;

export const UpdateStepBody = z.object({
  name: text(WORKFLOW_LIMITS.stepName).optional(),
  config: StepConfigInput.optional().describe(`Replaces the config; 409 while executions are at the step. ${CONFIG_DOC}`),
  position: Position.optional(),
});
export type UpdateStepBody = z.infer<typeof UpdateStepBody>;

export const DeleteStepQuery = z.object({
  splice: z
    .enum(['true', 'false'])
    .optional()
    .transform((v) => v === 'true')
    .describe('true: reconnect the single predecessor to the single successor (409 when ambiguous)'),
});

export const AddTransitionBody = z.object({
  fromStepId: z.string(),
  toStepId: z.string(),
  branch: z.enum(WORKFLOW_BRANCHES).nullable().optional().describe('yes/no from CONDITION; event/timeout from WAIT_FOR_EVENT; none otherwise'),
  condition: z.object({ branch: z.enum(['yes', 'no']) }).optional().describe("Plunk's form of branch yes/no"),
  waitOutcome: z.enum(['EVENT', 'TIMEOUT']).optional().describe("Plunk's form of branch event/timeout"),
});
export type AddTransitionBody = z.infer<typeof AddTransitionBody>;

const FieldKinds = ['contact', 'data', 'event', 'context', 'trackedEvent'] as const;

export const WorkflowField = z.object({
  field: z.string().describe('As used in a CONDITION filter: email, data.plan, event.orderId, context.<key>…'),
  source: z
    .enum(FieldKinds)
    .describe("contact: standard field; data: contact data key; event: the execution's event data; context: the execution context; trackedEvent: a tracked event (triggered… operators)"),
  type: z.enum(['string', 'number', 'boolean', 'date', 'object', 'array', 'any']),
  operators: z.array(z.string()).describe('Operators the field takes'),
  hint: z.boolean().describe('A pattern to fill in (`context.<key>`), not a key seen in data'),
  count: z.int().optional().describe('data: contacts having the key; event: sampled events carrying it'),
});

export const WorkflowFields = z
  .object({
    data: z.array(WorkflowField),
    eventName: z.string().nullable(),
    sampledEvents: z.int().describe('Events of eventName looked at (the latest, at most 1,000)'),
  })
  .meta({ id: 'WorkflowFields' });
export type WorkflowFields = z.infer<typeof WorkflowFields>;

export const FieldsQuery = z.object({ eventName: z.string().min(1).max(255).optional().describe('Also list the data keys seen on this event') });
