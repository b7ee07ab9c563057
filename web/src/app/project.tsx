import { createContext, type ReactNode, useContext } from 'react';
import type { Project } from './session';

const ProjectContext = createContext<Project | undefined>(undefined);

export function ProjectProvider({ project, children }: { project: Project; children: ReactNode }) {
  return <ProjectContext.Provider value={project}>{children}</ProjectContext.Provider>;
}

/** The project of the page (inside /app/projects/:projectId). */
export function useProject(): Project {
  const project = useContext(ProjectContext);
  if (!project) throw new Error('useProject outside a project page');
  return project;
}

/** A path inside the current project: projectPath(p, 'contacts') → /projects/<id>/contacts. */
export const projectPath = (project: Pick<Project, 'id'>, path = ''): string => `/projects/${project.id}${path ? `/${path}` : ''}`;
