import type { LucideIcon } from 'lucide-react';
import type { RouteObject } from 'react-router';

/** A sidebar entry of a project page. */
export interface NavItem {
  label: string;
  /** Relative to /app/projects/:projectId ('' is Home). */
  path: string;
  icon: LucideIcon;
  /** Position in the sidebar; the `setup` group (Domains, Settings) comes after the main one. */
  order: number;
  group: 'main' | 'setup';
}

/**
 * What a folder of web/src/pages/ adds to the app, in its `routes.tsx`: routes inside a project
 * (/app/projects/:projectId/…, with the sidebar), routes outside one (sign-in, invitations…),
 * and its sidebar entries. The app collects every folder's module (app/routes.tsx), so a page is
 * added without editing a shared list, and the sidebar shows only pages that exist.
 */
export interface PageModule {
  project?: RouteObject[];
  outside?: RouteObject[];
  nav?: NavItem[];
}
