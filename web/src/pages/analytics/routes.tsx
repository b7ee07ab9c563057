import { ChartLine } from 'lucide-react';
import type { PageModule } from '@/app/modules';

export const page: PageModule = {
  project: [{ path: 'analytics', lazy: () => import('./AnalyticsPage').then((m) => ({ Component: m.AnalyticsPage })) }],
  nav: [{ label: 'Analytics', path: 'analytics', icon: ChartLine, order: 70, group: 'main' }],
};
