import { Navigate, type RouteObject } from 'react-router';
import type { NavItem, PageModule } from './modules';
import { ProjectLayout } from './ProjectLayout';
import { RequireSession } from './RequireSession';
import { StartPage } from './StartPage';
import { NotFound } from './NotFound';

const modules = Object.values(import.meta.glob<PageModule>('../pages/*/routes.tsx', { eager: true, import: 'page' }));

/** Every page's sidebar entry, main group first, in their order. */
export const NAV: NavItem[] = modules
  .flatMap((m) => m.nav ?? [])
  .sort((a, b) => (a.group === b.group ? a.order - b.order : a.group === 'main' ? -1 : 1));

export const ROUTES: RouteObject[] = [
  ...modules.flatMap((m) => m.outside ?? []),
  {
    element: <RequireSession />,
    children: [
      { index: true, element: <StartPage /> },
      { path: 'projects/:projectId', element: <ProjectLayout />, children: [...modules.flatMap((m) => m.project ?? []), { path: '*', element: <NotFound /> }] },
      { path: 'projects', element: <Navigate to="/" replace /> },
    ],
  },
  { path: '*', element: <NotFound /> },
];
