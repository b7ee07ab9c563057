import { Megaphone } from 'lucide-react';
import type { PageModule } from '@/app/modules';

/** Campaigns (issue 13 point 5): the list, the composer and each campaign's progress and results. */
export const page: PageModule = {
  project: [
    { path: 'campaigns', lazy: () => import('./CampaignsPage').then((m) => ({ Component: m.CampaignsPage })) },
    { path: 'campaigns/new', lazy: () => import('./CampaignComposerPage').then((m) => ({ Component: m.CampaignComposerPage })) },
    { path: 'campaigns/:campaignId/edit', lazy: () => import('./CampaignComposerPage').then((m) => ({ Component: m.CampaignComposerPage })) },
    { path: 'campaigns/:campaignId', lazy: () => import('./CampaignPage').then((m) => ({ Component: m.CampaignPage })) },
  ],
  nav: [{ label: 'Campaigns', path: 'campaigns', icon: Megaphone, order: 40, group: 'main' }],
};
