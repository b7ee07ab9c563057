import { z } from 'zod';
import { SUSPENSION_SOURCES } from '../../db/schema.js';
import { LEVELS } from './thresholds.js';

export const ProjectIdParams = z.object({ id: z.string() });

const Window = z.object({
  sent: z.number().int().describe('Emails handed to the relay in the window'),
  bounces: z.number().int().describe('Hard bounces recorded in the window (soft bounces never count)'),
  complaints: z.number().int().describe('Complaints recorded in the window'),
  bounceRate: z.number().describe('bounces / sent (0 when nothing was sent)'),
  complaintRate: z.number().describe('complaints / sent (0 when nothing was sent)'),
});

const Metric = z.object({
  kind: z.enum(['rate', 'count']),
  value: z.number().describe('A fraction for rates (0.05 = 5%), a number for counts'),
  warning: z.number().describe('The value at which the level is warning'),
  critical: z.number().describe('The value at which the level is critical (the project is disabled)'),
  judged: z.boolean().describe('False when the window has too few emails to judge the rate (its level is healthy)'),
  level: z.enum(LEVELS),
});

export const Suspension = z.object({
  id: z.uuid(),
  source: z.enum(SUSPENSION_SOURCES).describe('AUTOMATIC: the reputation check; OPERATOR: the CLI; BILLING: a failed payment'),
  reason: z.string(),
  metrics: z.record(z.string(), z.unknown()).describe('The counts and levels when the project was disabled'),
  createdAt: z.iso.datetime(),
  liftedAt: z.iso.datetime().nullable(),
  liftedBy: z.string().nullable(),
});

export const SecurityState = z
  .object({
    projectId: z.uuid(),
    level: z.enum(LEVELS).describe("The worst metric's level"),
    disabled: z.boolean(),
    disabledReason: z.string().nullable(),
    disabledAt: z.iso.datetime().nullable(),
    autoDisable: z.boolean().describe('Whether a critical level disables the project on this instance (AUTO_DISABLE_PROJECTS)'),
    young: z.boolean().describe('Younger than 30 days: judged by the stricter absolute counts'),
    countingSince: z.iso.datetime().nullable().describe('The last lifted suspension: the numbers count from the hour after it; null: since the project began'),
    windows: z.object({ last24h: Window, last7d: Window, allTime: Window }),
    metrics: z.object({
      bounceRate7d: Metric,
      bounceRateAllTime: Metric,
      complaintRate7d: Metric,
      complaintRateAllTime: Metric,
      bounces24h: Metric,
      bounces7d: Metric,
      complaints24h: Metric,
      complaints7d: Metric,
    }),
    suspensions: z.array(Suspension).describe('Newest first, at most 50'),
  })
  .meta({ id: 'SecurityState' });
export type SecurityState = z.infer<typeof SecurityState>;

/** The billing part of the setup state. Billing is helper F's (issue 11 part 8); off: `{enabled: false}`. */
export const BillingSetupState = z
  .object({ enabled: z.boolean().describe('Whether billing is configured on this instance (STRIPE_SECRET_KEY)') })
  .catchall(z.unknown());
export type BillingSetupState = z.infer<typeof BillingSetupState>;

export const SetupState = z
  .object({
    projectId: z.uuid(),
    hasVerifiedDomain: z.boolean(),
    contactCount: z.number().int().describe('Capped at 10,000 (see contactCountCapped)'),
    contactCountCapped: z.boolean().describe('True when the project has more contacts than contactCount'),
    templateCount: z.number().int().describe('Capped at 10,000 (see templateCountCapped)'),
    templateCountCapped: z.boolean(),
    hasSentEmail: z.boolean().describe('An email of the project was ever handed to the relay (a project reset does not clear it)'),
    lastCampaignSentAt: z.iso.datetime().nullable(),
    hasEnabledWorkflow: z.boolean(),
    billing: BillingSetupState,
  })
  .meta({ id: 'SetupState' });
export type SetupState = z.infer<typeof SetupState>;
