import { useQuery } from '@tanstack/react-query';
import { api, unwrap } from '@/api/client';
import type { components } from '@/api/schema';

export type User = components['schemas']['User'];
export type Project = components['schemas']['Project'];

export const meKey = ['users', '@me'] as const;
export const projectsKey = ['users', '@me', 'projects'] as const;

/** The signed-in user (401 when the session has ended: the caller decides). */
export const useMe = () => useQuery({ queryKey: meKey, queryFn: () => unwrap(api.GET('/users/@me')), retry: false, staleTime: 60_000 });

/** The user's projects, with their keys (OWNERs and ADMINs) and role. */
export const useProjects = () => useQuery({ queryKey: projectsKey, queryFn: () => unwrap(api.GET('/users/@me/projects')), staleTime: 30_000 });

const LAST_PROJECT = 'lastProject';

export const rememberProject = (id: string): void => {
  try {
    localStorage.setItem(LAST_PROJECT, id);
  } catch {
    // Private mode: nothing remembered.
  }
};

export const lastProject = (): string | null => {
  try {
    return localStorage.getItem(LAST_PROJECT);
  } catch {
    return null;
  }
};
