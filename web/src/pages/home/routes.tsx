import { House } from 'lucide-react';
import type { PageModule } from '@/app/modules';

export const page: PageModule = {
  project: [{ index: true, lazy: () => import('./HomePage').then((m) => ({ Component: m.HomePage })) }],
  nav: [{ label: 'Home', path: '', icon: House, order: 0, group: 'main' }],
};
