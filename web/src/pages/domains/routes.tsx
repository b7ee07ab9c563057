import { Globe } from 'lucide-react';
import type { PageModule } from '@/app/modules';

export const page: PageModule = {
  project: [{ path: 'domains', lazy: () => import('./DomainsPage').then((m) => ({ Component: m.DomainsPage })) }],
  nav: [{ label: 'Domains', path: 'domains', icon: Globe, order: 10, group: 'setup' }],
};
