import { Users } from 'lucide-react';
import type { PageModule } from '@/app/modules';

/** Contacts: the paged table with bulk actions, import and export; one contact's page. */
export const page: PageModule = {
  project: [
    { path: 'contacts', lazy: () => import('./ContactsPage').then((m) => ({ Component: m.ContactsPage })) },
    { path: 'contacts/:contactId', lazy: () => import('./ContactPage').then((m) => ({ Component: m.ContactPage })) },
  ],
  nav: [{ label: 'Contacts', path: 'contacts', icon: Users, order: 10, group: 'main' }],
};
