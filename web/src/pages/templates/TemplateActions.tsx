import { useMutation, useQuery, useQueryClient } from '@tanstack/react-query';
import { api, unwrap } from '@/api/client';
import type { components } from '@/api/schema';
import { ConfirmDialog } from '@/components/ui/dialog';
import { useToast } from '@/components/toast';

type Template = components['schemas']['Template'];

/** Duplicates a template (POST /templates/:id/duplicate); resolves to the copy. */
export function useDuplicateTemplate(onDone: (copy: Template) => void) {
  const qc = useQueryClient();
  const toast = useToast();
  return useMutation({
    mutationFn: (id: string) => unwrap(api.POST('/templates/{id}/duplicate', { params: { path: { id } } })),
    onSuccess: (copy) => {
      void qc.invalidateQueries({ queryKey: ['templates'] });
      toast({ title: `Duplicated as “${copy.name}”` });
      onDone(copy);
    },
    onError: (e) => toast({ title: 'Could not duplicate the template', description: e.message, tone: 'bad' }),
  });
}

/** The delete confirmation: names the template and where it is used (GET /templates/:id/usage). */
export function DeleteTemplateDialog({ template, open, onOpenChange, onDeleted }: { template: Pick<Template, 'id' | 'name'>; open: boolean; onOpenChange: (o: boolean) => void; onDeleted: () => void }) {
  const qc = useQueryClient();
  const toast = useToast();
  const usage = useQuery({
    queryKey: ['templates', template.id, 'usage'],
    queryFn: () => unwrap(api.GET('/templates/{id}/usage', { params: { path: { id: template.id } } })),
    enabled: open,
  });
  const del = useMutation({
    mutationFn: () => unwrap(api.DELETE('/templates/{id}', { params: { path: { id: template.id } } })),
    onSuccess: () => {
      void qc.invalidateQueries({ queryKey: ['templates'] });
      toast({ title: `Deleted “${template.name || 'Untitled template'}”` });
      onOpenChange(false);
      onDeleted();
    },
    onError: (e) => toast({ title: 'Could not delete the template', description: e.message, tone: 'bad' }),
  });
  const workflows = usage.data?.workflows ?? [];
  const campaigns = usage.data?.campaigns ?? [];
  return (
    <ConfirmDialog
      open={open}
      onOpenChange={onOpenChange}
      title="Delete template?"
      description={`“${template.name || 'Untitled template'}” is deleted for good. Emails already sent with it keep their history.`}
      confirmLabel="Delete template"
      pending={del.isPending || usage.isPending}
      onConfirm={() => del.mutate()}
    >
      {usage.isPending ? <p className="text-sm text-fg-muted">Checking where it is used…</p> : null}
      {usage.isError ? <p className="text-sm text-bad">Could not check where it is used: {usage.error.message}</p> : null}
      {usage.data && workflows.length + campaigns.length === 0 ? <p className="text-sm text-fg-muted">No workflow or campaign uses it.</p> : null}
      {workflows.length + campaigns.length > 0 ? (
        <div className="rounded-md border border-warn/40 bg-warn/5 p-3 text-sm">
          <p className="font-medium text-warn">Still in use — these steps will have no template:</p>
          <ul className="mt-1 list-disc pl-5">
            {workflows.map((w) => (
              <li key={w.stepId}>
                Workflow “{w.workflowName}”, step {w.stepName ? `“${w.stepName}”` : w.stepId}
              </li>
            ))}
            {campaigns.map((c) => (
              <li key={c.id}>
                Campaign “{c.name}” ({c.status.toLowerCase()})
              </li>
            ))}
          </ul>
        </div>
      ) : null}
    </ConfirmDialog>
  );
}
