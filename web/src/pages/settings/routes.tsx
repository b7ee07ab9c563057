import { Settings } from 'lucide-react';
import type { PageModule } from '@/app/modules';
import { RequireSession } from '@/app/RequireSession';

export const page: PageModule = {
  project: [{ path: 'settings', lazy: () => import('./SettingsPage').then((m) => ({ Component: m.SettingsPage })) }],
  outside: [
    // The account's own settings (where OAuth linking returns: /app/settings?linked=… or ?error=…).
    { element: <RequireSession />, children: [{ path: 'settings', lazy: () => import('./AccountSettingsPage').then((m) => ({ Component: m.AccountSettingsPage })) }] },
  ],
  nav: [{ label: 'Settings', path: 'settings', icon: Settings, order: 20, group: 'setup' }],
};
