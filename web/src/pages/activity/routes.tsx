import { Activity } from 'lucide-react';
import type { PageModule } from '@/app/modules';

export const page: PageModule = {
  project: [{ path: 'activity', lazy: () => import('./ActivityPage').then((m) => ({ Component: m.ActivityPage })) }],
  nav: [{ label: 'Activity', path: 'activity', icon: Activity, order: 60, group: 'main' }],
};
