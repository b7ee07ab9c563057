import { useMutation, useQueryClient } from '@tanstack/react-query';
import { type FormEvent, useState } from 'react';
import { useNavigate } from 'react-router';
import { ApiError, api, unwrap } from '@/api/client';
import { Button } from '@/components/ui/button';
import { Field } from '@/components/ui/field';
import { Input } from '@/components/ui/input';
import { projectsKey, rememberProject } from './session';

/** Creates a project and opens it. */
export function NewProjectForm({ onDone }: { onDone?: () => void }) {
  const [name, setName] = useState('');
  const queryClient = useQueryClient();
  const navigate = useNavigate();
  const create = useMutation({
    mutationFn: (body: { name: string }) => unwrap(api.POST('/users/@me/projects', { body })),
    onSuccess: async (project) => {
      await queryClient.invalidateQueries({ queryKey: projectsKey });
      rememberProject(project.id);
      onDone?.();
      void navigate(`/projects/${project.id}`);
    },
  });
  const error = create.error instanceof ApiError ? create.error : undefined;
  const submit = (e: FormEvent) => {
    e.preventDefault();
    create.mutate({ name: name.trim() });
  };
  return (
    <form onSubmit={submit} className="grid gap-4">
      <Field label="Project name" error={error?.fieldMessage('name') ?? (error && error.fields.length === 0 ? error.message : undefined)}>
        <Input value={name} onChange={(e) => setName(e.target.value)} placeholder="My app" required maxLength={100} autoFocus />
      </Field>
      <Button type="submit" disabled={create.isPending || name.trim() === ''}>
        Create project
      </Button>
    </form>
  );
}
