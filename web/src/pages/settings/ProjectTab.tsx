import { useMutation, useQuery, useQueryClient } from '@tanstack/react-query';
import { type FormEvent, useState } from 'react';
import { ApiError, api, unwrap } from '@/api/client';
import { useProject } from '@/app/project';
import { type Project, projectsKey } from '@/app/session';
import { useToast } from '@/components/toast';
import { Button } from '@/components/ui/button';
import { Card, CardBody, CardHeader, CardTitle } from '@/components/ui/card';
import { Field } from '@/components/ui/field';
import { Input, Select } from '@/components/ui/input';
import { formatNumber } from '@/lib/format';

export const configKey = ['config'] as const;
export const useConfig = () => useQuery({ queryKey: configKey, queryFn: () => unwrap(api.GET('/config')), staleTime: 5 * 60_000 });

const TRACKING: { value: Project['tracking']; label: string }[] = [
  { value: 'ENABLED', label: 'Opens and clicks on every email' },
  { value: 'MARKETING_ONLY', label: 'Marketing emails only (not transactional)' },
  { value: 'DISABLED', label: 'Off: no tracking pixel, links untouched' },
];

/** Name, open/click tracking and sending rate (PATCH /users/@me/projects/:id). */
export function ProjectTab() {
  const project = useProject();
  const queryClient = useQueryClient();
  const notify = useToast();
  const config = useConfig();
  const [name, setName] = useState(project.name);
  const [tracking, setTracking] = useState(project.tracking);
  const [rate, setRate] = useState(project.sendingRate === null ? '' : String(project.sendingRate));
  const canEdit = project.role !== 'MEMBER';
  const save = useMutation({
    mutationFn: () =>
      unwrap(
        api.PATCH('/users/@me/projects/{id}', {
          params: { path: { id: project.id } },
          body: { name, tracking, sendingRate: rate.trim() === '' ? null : Number(rate) },
        }),
      ),
    onSuccess: (next) => {
      queryClient.setQueryData<Project[]>(projectsKey, (list) => list?.map((p) => (p.id === next.id ? { ...next, role: p.role } : p)));
      void queryClient.invalidateQueries({ queryKey: projectsKey });
      notify({ title: 'Settings saved' });
    },
  });
  const error = save.error instanceof ApiError ? save.error : undefined;
  const submit = (e: FormEvent) => {
    e.preventDefault();
    save.mutate();
  };
  const max = config.data?.maxProjectSendingRate;
  return (
    <Card>
      <CardHeader>
        <CardTitle>Project</CardTitle>
      </CardHeader>
      <CardBody>
        <form onSubmit={submit} className="grid max-w-lg gap-4">
          <Field label="Project name" error={error?.fieldMessage('name')}>
            <Input value={name} onChange={(e) => setName(e.target.value)} required maxLength={100} disabled={!canEdit} />
          </Field>
          <Field label="Open and click tracking" error={error?.fieldMessage('tracking')}>
            <Select value={tracking} onChange={(e) => setTracking(e.target.value as Project['tracking'])} disabled={!canEdit}>
              {TRACKING.map((t) => (
                <option key={t.value} value={t.value}>
                  {t.label}
                </option>
              ))}
            </Select>
          </Field>
          <Field
            label="Sending rate (emails per second)"
            error={error?.fieldMessage('sendingRate')}
            hint={`Empty: the instance's default.${max ? ` At most ${formatNumber(max)} on this instance.` : ''} Decimals allowed (0.5 = one every 2 s).`}
          >
            <Input type="number" inputMode="decimal" min={0} step="any" value={rate} onChange={(e) => setRate(e.target.value)} disabled={!canEdit} placeholder="Instance default" />
          </Field>
          {error && error.fields.length === 0 ? (
            <p role="alert" className="text-sm text-bad">
              {error.message}
            </p>
          ) : null}
          {canEdit ? (
            <div>
              <Button type="submit" disabled={save.isPending}>
                Save changes
              </Button>
            </div>
          ) : (
            <p className="text-fg-muted">Only owners and admins change the project's settings.</p>
          )}
        </form>
      </CardBody>
    </Card>
  );
}
