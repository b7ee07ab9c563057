import { useEffect, useLayoutEffect } from 'react';
import { Outlet, useParams } from 'react-router';
import { setCurrentProject } from '@/api/client';
import { FrameState } from './FrameState';
import { NotFound } from './NotFound';
import { ProjectProvider } from './project';
import { rememberProject, useProjects } from './session';
import { Sidebar } from './Sidebar';

/** /app/projects/:projectId/…: the sidebar, the disabled-project banner, and the page. */
export function ProjectLayout() {
  const { projectId = '' } = useParams();
  const projects = useProjects();
  const project = projects.data?.find((p) => p.id === projectId);
  // Before the children's first queries: they act on this project.
  useLayoutEffect(() => setCurrentProject(project?.id), [project?.id]);
  useEffect(() => {
    if (project) rememberProject(project.id);
  }, [project]);

  if (projects.isPending || projects.error) return <FrameState query={projects} />;
  if (!project) return <NotFound />;
  return (
    <ProjectProvider project={project}>
      <div className="flex min-h-full">
        <Sidebar project={project} projects={projects.data} />
        <div className="min-w-0 flex-1">
          {project.disabled ? (
            <div role="alert" className="border-b border-bad/40 bg-bad/10 px-6 py-2 text-bad">
              This project is disabled{project.disabledReason ? `: ${project.disabledReason}` : ''}. It cannot send or track until an operator re-enables it.
            </div>
          ) : null}
          <main className="mx-auto max-w-6xl px-6 py-8">
            <Outlet />
          </main>
        </div>
      </div>
    </ProjectProvider>
  );
}
