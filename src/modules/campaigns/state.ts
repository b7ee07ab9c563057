import type { CampaignStatus } from '../../db/schema.js';
import { conflict } from '../../http/errors.js';

/**
 * The campaign state machine (DESIGN §8):
 *
 *   DRAFT ──send──▶ SENDING ──every email finished──▶ SENT
 *     │                ▲  └──cancel──▶ CANCELLED
 *     └─send+date─▶ SCHEDULED ──its time (job)──┘
 *                      └──cancel──▶ CANCELLED
 *   SCHEDULED/SENDING ──its send job cannot proceed──▶ CANCELLED (start-failure.ts)
 *
 * Every transition is one UPDATE guarded by `status = <from>` on a locked row, so two
 * concurrent requests (send + cancel, cancel + completion) cannot both win.
 */
export const CampaignAction = {
  update: 'update',
  send: 'send',
  cancel: 'cancel',
  delete: 'delete',
} as const;
export type CampaignAction = (typeof CampaignAction)[keyof typeof CampaignAction];

/** The states each action is allowed from. */
export const ALLOWED_FROM: Record<CampaignAction, readonly CampaignStatus[]> = {
  update: ['DRAFT', 'SCHEDULED'],
  send: ['DRAFT'],
  cancel: ['SCHEDULED', 'SENDING'],
  // "Active executions" (SCHEDULED or SENDING) block a delete.
  delete: ['DRAFT', 'SENT', 'CANCELLED'],
};

/** States in which the campaign has (or is about to have) work in flight. */
export const ACTIVE_STATUSES: readonly CampaignStatus[] = ['SCHEDULED', 'SENDING'];

const WHY: Record<CampaignAction, string> = {
  update: 'Only DRAFT or SCHEDULED campaigns can be edited',
  send: 'Only DRAFT campaigns can be sent',
  cancel: 'Only SCHEDULED or SENDING campaigns can be cancelled',
  delete: 'A SCHEDULED or SENDING campaign cannot be deleted; cancel it first',
};

/** 409 CONFLICT unless `action` is allowed from `status`; details carry both. */
export function assertTransition(status: CampaignStatus, action: CampaignAction): void {
  const allowed = ALLOWED_FROM[action];
  if (!allowed.includes(status)) throw conflict(`${WHY[action]} (this one is ${status})`, { status, allowed });
}
