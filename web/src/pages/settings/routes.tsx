import { Settings } from 'lucide-react';
import { Navigate, useLocation } from 'react-router';
import type { PageModule } from '@/app/modules';
import { RequireSession } from '@/app/RequireSession';

function BillingRedirect() {
  const location = useLocation();
  const params = new URLSearchParams(location.search);
  params.set('tab', 'billing');
  return <Navigate to={`../settings?${params.toString()}`} relative="path" replace />;
}

export const page: PageModule = {
  project: [
    { path: 'settings', lazy: () => import('./SettingsPage').then((m) => ({ Component: m.SettingsPage })) },
    // Where Stripe's checkout returns (/app/projects/<id>/billing?checkout=success|cancelled): the billing tab.
    { path: 'billing', element: <BillingRedirect /> },
  ],
  outside: [
    // The account's own settings (where OAuth linking returns: /app/settings?linked=… or ?error=…).
    { element: <RequireSession />, children: [{ path: 'settings', lazy: () => import('./AccountSettingsPage').then((m) => ({ Component: m.AccountSettingsPage })) }] },
  ],
  nav: [{ label: 'Settings', path: 'settings', icon: Settings, order: 20, group: 'setup' }],
};
