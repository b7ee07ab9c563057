import { useMutation, useQueryClient } from '@tanstack/react-query';
import { useState } from 'react';
import { useNavigate } from 'react-router';
import { ApiError, api, setCurrentProject, unwrap } from '@/api/client';
import { useProject } from '@/app/project';
import { type Project, projectsKey } from '@/app/session';
import { useToast } from '@/components/toast';
import { Button } from '@/components/ui/button';
import { Card, CardBody } from '@/components/ui/card';
import { ConfirmDialog } from '@/components/ui/dialog';
import { Field } from '@/components/ui/field';
import { Input } from '@/components/ui/input';

type Action = 'reset' | 'delete';

const TEXT: Record<Action, { title: string; lost: string; button: string }> = {
  reset: {
    title: 'Reset the project',
    lost: 'Deletes every contact, event, email, campaign, segment, workflow, template, upload and webhook delivery of this project. Its name, keys, members, domains, webhook endpoints, suppressions and billing stay.',
    button: 'Reset project',
  },
  delete: {
    title: 'Delete the project',
    lost: 'Deletes the project and everything in it: its data, keys, members, invitations, domains and webhook endpoints. Its keys stop working at once.',
    button: 'Delete project',
  },
};

/** Reset and delete (OWNER only), each confirmed by typing the project's name. */
export function DangerTab() {
  const project = useProject();
  const queryClient = useQueryClient();
  const notify = useToast();
  const navigate = useNavigate();
  const [open, setOpen] = useState<Action | undefined>();
  const [typed, setTyped] = useState('');
  const run = useMutation({
    mutationFn: async (action: Action) => {
      const args = { params: { path: { id: project.id } }, body: { confirm: typed } };
      if (action === 'reset') return unwrap(api.POST('/users/@me/projects/{id}/reset', args));
      await unwrap(api.DELETE('/users/@me/projects/{id}', args));
      return undefined;
    },
    onSuccess: (result, action) => {
      setOpen(undefined);
      setTyped('');
      if (action === 'reset') {
        // Every cached list of this project is stale now.
        void queryClient.invalidateQueries({ predicate: (q) => q.queryKey[0] !== 'users' });
        if (result) queryClient.setQueryData<Project[]>(projectsKey, (list) => list?.map((p) => (p.id === result.id ? { ...result, role: p.role } : p)));
        notify({ title: `${project.name} was reset` });
        return;
      }
      setCurrentProject(undefined);
      queryClient.setQueryData<Project[]>(projectsKey, (list) => list?.filter((p) => p.id !== project.id));
      void queryClient.invalidateQueries({ queryKey: projectsKey });
      notify({ title: `${project.name} was deleted` });
      void navigate('/', { replace: true });
    },
  });
  const error = run.error instanceof ApiError ? run.error : undefined;
  const choose = (a: Action) => {
    run.reset();
    setTyped('');
    setOpen(a);
  };
  return (
    <div className="grid gap-4">
      {(['reset', 'delete'] as const).map((a) => (
        <Card key={a} className="border-bad/40">
          <CardBody className="flex flex-wrap items-center justify-between gap-4">
            <div className="max-w-2xl">
              <h2 className="font-semibold">{TEXT[a].title}</h2>
              <p className="mt-1 text-fg-muted">{TEXT[a].lost}</p>
            </div>
            <Button variant="danger" onClick={() => choose(a)}>
              {TEXT[a].button}
            </Button>
          </CardBody>
        </Card>
      ))}
      {open ? (
        <ConfirmDialog
          open
          onOpenChange={(o) => !o && setOpen(undefined)}
          title={`${TEXT[open].title} “${project.name}”?`}
          description={`${TEXT[open].lost} This cannot be undone.`}
          confirmLabel={TEXT[open].button}
          pending={run.isPending}
          confirmDisabled={typed.trim() !== project.name}
          onConfirm={() => run.mutate(open)}
        >
          <Field label={`Type “${project.name}” to confirm`} error={error?.fieldMessage('confirm') ?? (error && error.fields.length === 0 ? error.message : undefined)}>
            <Input value={typed} onChange={(e) => setTyped(e.target.value)} autoComplete="off" autoFocus />
          </Field>
        </ConfirmDialog>
      ) : null}
    </div>
  );
}
