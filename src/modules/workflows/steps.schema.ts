import { z } from 'zod';
import { type ConditionTree, ConditionTreeSchema, FilterSchema } from '../../conditions/index.js';
import type { WorkflowStepType } from '../../db/schema.js';
import { WorkflowEventName } from './event-name.js';

/**
 * Step config schemas (DESIGN §9), shared by the definition routes (validation on write) and the
 * engine (reading stored configs). Every schema is strict: an unknown key is a 422 naming
 * `config.<key>`. `parseStepConfig` answers the normalised config stored in workflow_steps.config.
 */

const SECONDS = { minutes: 60, hours: 3600, days: 86_400 } as const;
/** DELAY: at most 365 days; WAIT_FOR_EVENT timeout: at most one year (seconds). */
export const MAX_DELAY_SECONDS = 365 * SECONDS.days;
export const MAX_WAIT_TIMEOUT_SECONDS = 365 * SECONDS.days;
export const DELAY_UNITS = ['minutes', 'hours', 'days'] as const;
export const WEBHOOK_METHODS = ['GET', 'POST', 'PUT', 'PATCH', 'DELETE'] as const;
/** WEBHOOK config.body as JSON, bytes. */
export const MAX_WEBHOOK_BODY_BYTES = 64 * 1024;
/** Headers the HTTP client sets itself (hop-by-hop, framing, Host): refused in WEBHOOK config.headers. */
export const FORBIDDEN_WEBHOOK_HEADERS: ReadonlySet<string> = new Set([
  'host',
  'content-length',
  'transfer-encoding',
  'connection',
  'keep-alive',
  'proxy-connection',
  'proxy-authenticate',
  'proxy-authorization',
  'te',
  'trailer',
  'upgrade',
]);

const issue = (message: string, code: string) => ({ message, params: { code } });
const HEADER_NAME = /^[!#$%&'*+\-.^_`|~0-9A-Za-z]+$/;

export const SendEmailConfig = z
  .strictObject({
    templateId: z.uuid().describe('A template of the project'),
    recipient: z
      .strictObject({
        type: z.enum(['CONTACT', 'CUSTOM']).describe('CONTACT (default): the enrolled contact; CUSTOM: customEmail'),
        customEmail: z.email().max(254).optional().describe('Required for CUSTOM'),
      })
      .refine((r) => r.type !== 'CUSTOM' || r.customEmail !== undefined, { ...issue('Required for recipient type CUSTOM', 'invalid_type'), path: ['customEmail'] })
      .optional(),
  })
  .meta({ id: 'SendEmailConfig' });

export const DelayConfig = z
  .strictObject({
    amount: z.number().positive(),
    unit: z.enum(DELAY_UNITS),
  })
  .refine((c) => c.amount * SECONDS[c.unit] <= MAX_DELAY_SECONDS, { ...issue('A delay is at most 365 days', 'too_big'), path: ['amount'] })
  .meta({ id: 'DelayConfig' });

export const WaitForEventConfig = z
  .strictObject({
    eventName: WorkflowEventName,
    timeout: z.int().positive().max(MAX_WAIT_TIMEOUT_SECONDS).optional().describe('Seconds; without a timeout branch a timed-out wait completes the execution'),
  })
  .meta({ id: 'WaitForEventConfig' });

/** One filter, or a whole §7 tree under `condition`; checked further by validateCondition (execution fields on). */
export const ConditionConfig = z
  .union([
    FilterSchema.strict(),
    z.strictObject({ condition: z.record(z.string(), z.unknown()).describe('A condition tree (DESIGN §7)') }),
  ])
  .meta({ id: 'ConditionConfig' });

const WebhookHeaders = z.record(z.string(), z.string().max(998)).superRefine((headers, ctx) => {
  const names = Object.keys(headers);
  if (names.length > 50) ctx.addIssue({ code: 'custom', message: 'At most 50 headers', params: { code: 'too_big' } });
  for (const name of names) {
    const value = headers[name] ?? '';
    if (!HEADER_NAME.test(name)) ctx.addIssue({ code: 'custom', path: [name], message: 'Not a valid header name', params: { code: 'invalid_string' } });
    else if (FORBIDDEN_WEBHOOK_HEADERS.has(name.toLowerCase())) {
      ctx.addIssue({ code: 'custom', path: [name], message: `${name} is set by the service and cannot be configured`, params: { code: 'invalid_string' } });
    } else if (/[\r\n\0]/.test(value)) ctx.addIssue({ code: 'custom', path: [name], message: 'Header values must not contain line breaks or NUL', params: { code: 'invalid_string' } });
  }
});

export const WebhookConfig = z
  .strictObject({
    url: z
      .url({ protocol: /^https?$/, error: 'Must be an http or https URL' })
      .max(2048),
    method: z.enum(WEBHOOK_METHODS).default('POST'),
    headers: WebhookHeaders.optional(),
    body: z
      .json()
      .refine((b) => Buffer.byteLength(JSON.stringify(b)) <= MAX_WEBHOOK_BODY_BYTES, issue(`At most ${MAX_WEBHOOK_BODY_BYTES} bytes as JSON`, 'too_big'))
      .optional()
      .describe('Sent as JSON; default: {workflow, execution, contact, event, context}'),
  })
  .meta({ id: 'WebhookConfig' });

export const SUBSCRIPTION_ACTIONS = ['none', 'subscribe', 'unsubscribe'] as const;

export const UpdateContactConfig = z
  .strictObject({
    updates: z.record(z.string(), z.union([z.string(), z.number(), z.boolean(), z.null()])).optional().describe('Contact data to write; null deletes a key'),
    subscribed: z.boolean().optional(),
    subscriptionAction: z.enum(SUBSCRIPTION_ACTIONS).optional().describe("Plunk's form, stored as `subscribed`"),
  })
  .refine(
    (c) => c.subscriptionAction === undefined || c.subscribed === undefined || c.subscriptionAction === 'none' || (c.subscriptionAction === 'subscribe') === c.subscribed,
    { ...issue('Contradicts subscribed', 'invalid_value'), path: ['subscriptionAction'] },
  )
  .transform(({ subscriptionAction, ...rest }) => ({
    ...rest,
    ...(subscriptionAction === 'subscribe' && { subscribed: true }),
    ...(subscriptionAction === 'unsubscribe' && { subscribed: false }),
  }))
  .meta({ id: 'UpdateContactConfig' });

export const ExitConfig = z.strictObject({ reason: z.string().max(500).optional() }).meta({ id: 'ExitConfig' });
export const TriggerConfig = z.strictObject({}).meta({ id: 'TriggerStepConfig' });

export const STEP_CONFIG_SCHEMAS = {
  TRIGGER: TriggerConfig,
  SEND_EMAIL: SendEmailConfig,
  DELAY: DelayConfig,
  WAIT_FOR_EVENT: WaitForEventConfig,
  CONDITION: ConditionConfig,
  WEBHOOK: WebhookConfig,
  UPDATE_CONTACT: UpdateContactConfig,
  EXIT: ExitConfig,
} as const satisfies Record<WorkflowStepType, z.ZodType>;

export type SendEmailConfig = z.infer<typeof SendEmailConfig>;
export type DelayConfig = z.infer<typeof DelayConfig>;
export type WaitForEventConfig = z.infer<typeof WaitForEventConfig>;
export type ConditionConfig = z.infer<typeof ConditionConfig>;
export type WebhookConfig = z.infer<typeof WebhookConfig>;
export type UpdateContactConfig = z.infer<typeof UpdateContactConfig>;
export type ExitConfig = z.infer<typeof ExitConfig>;

/** A field error of a config, named `config.<path>` (unknown keys: one per key). */
export interface ConfigIssue {
  field: string;
  message: string;
  code: string;
}

function issuesOf(error: z.ZodError, prefix: string): ConfigIssue[] {
  const out: ConfigIssue[] = [];
  for (const i of error.issues) {
    const at = [prefix, ...i.path.map(String)].join('.');
    if (i.code === 'unrecognized_keys') {
      for (const key of i.keys) out.push({ field: `${at}.${key}`, message: `Unknown key "${key}"`, code: 'unrecognized_keys' });
    } else if (i.code === 'invalid_union') {
      // CONDITION: neither a filter nor {condition}: report the filter form's problems (the common form).
      const first = i.errors[0];
      if (first) out.push(...issuesOf(new z.ZodError(first), at));
      else out.push({ field: at, message: i.message, code: 'invalid_type' });
    } else {
      const custom = i.code === 'custom' && typeof i.params?.code === 'string' ? i.params.code : undefined;
      out.push({ field: at, message: i.message, code: custom ?? (i.code === 'invalid_format' ? 'invalid_string' : i.code) });
    }
  }
  return out;
}

/** A step config checked against its type's schema (no database checks), normalised for storage. */
export function parseStepConfig(type: WorkflowStepType, raw: unknown): { config: Record<string, unknown>; errors?: undefined } | { errors: ConfigIssue[] } {
  const schema: z.ZodType = STEP_CONFIG_SCHEMAS[type];
  const parsed = schema.safeParse(raw ?? {});
  if (!parsed.success) return { errors: issuesOf(parsed.error, 'config') };
  const config = parsed.data;
  if (typeof config !== 'object' || config === null || Array.isArray(config)) return { errors: [{ field: 'config', message: 'Must be an object', code: 'invalid_type' }] };
  return { config: { ...config } };
}

/**
 * A CONDITION step's config as a §7 tree: `{condition}` as is, a single filter as a one-filter
 * group. Fields may be `event.<key>`/`context.<key>` (validateCondition/compileCondition with
 * execution fields). Throws on a config that is neither form (stored configs passed parseStepConfig);
 * field/operator checks are compileCondition's (it re-checks stored trees).
 */
export function conditionOf(config: unknown): ConditionTree {
  const parsed = ConditionConfig.parse(config);
  if ('condition' in parsed) return ConditionTreeSchema.parse(parsed.condition);
  const { field, operator, value, unit } = parsed;
  return { logic: 'AND', groups: [{ filters: [{ field, operator, ...(value !== undefined && { value }), ...(unit !== undefined && { unit }) }] }] };
}

/** DELAY's length in seconds. */
export const delaySeconds = (c: DelayConfig): number => c.amount * SECONDS[c.unit];
