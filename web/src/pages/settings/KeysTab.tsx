import { useMutation, useQueryClient } from '@tanstack/react-query';
import { Eye, EyeOff, RotateCw } from 'lucide-react';
import { useState } from 'react';
import { api, unwrap } from '@/api/client';
import { useProject } from '@/app/project';
import { type Project, projectsKey } from '@/app/session';
import { useToast } from '@/components/toast';
import { Button } from '@/components/ui/button';
import { Card, CardBody, CardHeader, CardTitle } from '@/components/ui/card';
import { ConfirmDialog } from '@/components/ui/dialog';
import { CopyButton, SecretText } from './parts';

/** The project's public and secret keys; rotating them (POST …/regenerate-keys). */
export function KeysTab() {
  const project = useProject();
  const queryClient = useQueryClient();
  const notify = useToast();
  const [revealed, setRevealed] = useState(false);
  const [confirm, setConfirm] = useState(false);
  const rotate = useMutation({
    mutationFn: () => unwrap(api.POST('/users/@me/projects/{id}/regenerate-keys', { params: { path: { id: project.id } } })),
    onSuccess: (next) => {
      queryClient.setQueryData<Project[]>(projectsKey, (list) => list?.map((p) => (p.id === next.id ? { ...next, role: p.role } : p)));
      void queryClient.invalidateQueries({ queryKey: projectsKey });
      setConfirm(false);
      notify({ title: 'New keys generated', description: 'The old keys no longer work.' });
    },
    onError: (err) => notify({ title: 'Could not rotate the keys', description: err.message, tone: 'bad' }),
  });
  const canRotate = project.role !== 'MEMBER';
  return (
    <Card>
      <CardHeader>
        <div>
          <CardTitle>API keys</CardTitle>
          <p className="mt-1 text-fg-muted">The public key tracks events from browsers; the secret key calls every other endpoint and must stay on your servers.</p>
        </div>
        {canRotate ? (
          <Button variant="secondary" onClick={() => setConfirm(true)}>
            <RotateCw /> Rotate keys
          </Button>
        ) : null}
      </CardHeader>
      <CardBody className="grid max-w-2xl gap-5">
        <div className="grid gap-1.5">
          <span className="text-sm font-medium" id="public-key-label">
            Public key
          </span>
          <div role="group" className="flex items-center gap-1" aria-labelledby="public-key-label">
            <code data-testid="public-key" className="min-w-0 flex-1 truncate rounded-md bg-muted px-2 py-1.5 font-mono text-xs">
              {project.public}
            </code>
            <CopyButton value={project.public} label="public key" />
          </div>
          <p className="text-xs text-fg-muted">For POST /v1/track only; safe to put in a web page.</p>
        </div>
        <div className="grid gap-1.5">
          <span className="text-sm font-medium" id="secret-key-label">
            Secret key
          </span>
          {project.secret ? (
            <div role="group" className="flex items-center gap-1" aria-labelledby="secret-key-label">
              <span data-testid="secret-key" className="flex min-w-0 flex-1">
                <SecretText value={project.secret} revealed={revealed} />
              </span>
              <Button size="icon" variant="ghost" className="size-8" aria-label={revealed ? 'Hide secret key' : 'Reveal secret key'} aria-pressed={revealed} onClick={() => setRevealed((r) => !r)}>
                {revealed ? <EyeOff /> : <Eye />}
              </Button>
              <CopyButton value={project.secret} label="secret key" />
            </div>
          ) : (
            <p className="text-fg-muted">Only owners and admins see the secret key. Members use the dashboard with their own sign-in.</p>
          )}
          <p className="text-xs text-fg-muted">Sent as Authorization: Bearer sk_… by your servers.</p>
        </div>
      </CardBody>
      <ConfirmDialog
        open={confirm}
        onOpenChange={setConfirm}
        title="Rotate the API keys?"
        description="New public and secret keys are generated and the old keys stop working at once: every server, script and web page using them gets 401 until it has the new keys."
        confirmLabel="Rotate keys"
        pending={rotate.isPending}
        onConfirm={() => rotate.mutate()}
      />
    </Card>
  );
}
