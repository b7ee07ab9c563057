import { z } from 'zod';
import { PROJECT_ROLES, TRACKING_MODES } from '../../db/schema.js';

export const Project = z
  .object({
    id: z.uuid(),
    name: z.string(),
    public: z.string().describe('Public key (pk_…): POST /v1/track only'),
    secret: z
      .string()
      .nullable()
      .describe('Secret key (sk_…): every other endpoint. null for MEMBERs: keys are for OWNERs and ADMINs (DESIGN §4); members call the API with their session and X-Project-Id'),
    disabled: z.boolean(),
    disabledReason: z.string().nullable().describe('Why the project is disabled (bounce or complaint rate, or an operator)'),
    tracking: z.enum(TRACKING_MODES),
    sendingRate: z
      .number()
      .nullable()
      .describe('Emails per second this project sends at most, across all workers; null = the instance default (PROJECT_SENDING_RATE)'),
    role: z.enum(PROJECT_ROLES).describe('Your role in this project'),
    createdAt: z.iso.datetime(),
    updatedAt: z.iso.datetime(),
  })
  .meta({ id: 'Project' });
export type Project = z.infer<typeof Project>;

const name = z.string().trim().min(1, 'Name must not be empty').max(100);

export const CreateProjectBody = z.object({ name });
export type CreateProjectBody = z.infer<typeof CreateProjectBody>;

export const UpdateProjectBody = z.object({
  name: name.optional(),
  tracking: z.enum(TRACKING_MODES).optional(),
  sendingRate: z
    .number()
    .positive()
    .max(1_000_000)
    .nullable()
    .optional()
    .describe('Emails per second (decimals allowed), at most the operator\'s MAX_PROJECT_SENDING_RATE; null = the instance default'),
});

/** The body of DELETE /users/@me/projects/:id and POST …/reset: the project's name, typed again (DESIGN §4). */
export const ConfirmProjectBody = z.preprocess(
  // No body at all is reported as a missing `confirm`, not a missing body.
  (body) => body ?? {},
  z.object({ confirm: z.string().describe('The project\'s name, exactly: confirms an irreversible operation') }),
);
export type ConfirmProjectBody = z.infer<typeof ConfirmProjectBody>;
export type UpdateProjectBody = z.infer<typeof UpdateProjectBody>;

export const ProjectIdParams = z.object({ id: z.string() });

export const WebhookSecret = z
  .object({ secret: z.string().describe('`whsec_…`: the key of the X-Signature HMAC on WEBHOOK step calls (docs/workflows.md)') })
  .meta({ id: 'WebhookSecret' });
export type WebhookSecret = z.infer<typeof WebhookSecret>;
