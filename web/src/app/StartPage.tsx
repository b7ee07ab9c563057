import { Navigate } from 'react-router';
import { Card, CardBody } from '@/components/ui/card';
import { FrameState } from './FrameState';
import { NewProjectForm } from './NewProjectForm';
import { lastProject, useProjects } from './session';

/** /app: the last project opened (or the first), or the first project to create. */
export function StartPage() {
  const projects = useProjects();
  if (projects.isPending || projects.error) return <FrameState query={projects} />;
  const last = lastProject();
  const target = projects.data.find((p) => p.id === last) ?? projects.data[0];
  if (target) return <Navigate to={`/projects/${target.id}`} replace />;
  return (
    <main className="grid min-h-full place-items-center p-8">
      <Card className="w-full max-w-sm">
        <CardBody className="grid gap-4">
          <div>
            <h1 className="text-lg font-semibold">Create your first project</h1>
            <p className="mt-1 text-fg-muted">A project holds contacts, templates, campaigns and workflows, with its own API keys.</p>
          </div>
          <NewProjectForm />
        </CardBody>
      </Card>
    </main>
  );
}
