import { useMutation, useQuery, useQueryClient } from '@tanstack/react-query';
import { TriangleAlert } from 'lucide-react';
import { useId, useState } from 'react';
import { ApiError, api, unwrap } from '@/api/client';
import type { components } from '@/api/schema';
import { useMe } from '@/app/session';
import { Button } from '@/components/ui/button';
import { ConfirmDialog, Dialog } from '@/components/ui/dialog';
import { Field } from '@/components/ui/field';
import { Input } from '@/components/ui/input';
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

/**
 * "Send test": one email of the SAVED template (POST /templates/:id/test) to an address, the
 * signed-in user's by default, optionally rendered with the data of the contact the preview
 * shows. With unsaved changes the dialog says that the saved version goes out, and offers to
 * save first (a template may be live in workflows, so saving is never implied).
 */
export function TemplateTestDialog({
  template,
  open,
  onOpenChange,
  dirty,
  save,
  previewContact,
}: {
  template: Pick<Template, 'id'>;
  open: boolean;
  onOpenChange: (o: boolean) => void;
  /** The editor has changes not saved yet. */
  dirty: boolean;
  /** Saves the editor's changes (rejects with the save's error, which the editor shows beside its fields). */
  save: () => Promise<unknown>;
  /** The contact the preview is rendered as, if any. */
  previewContact: { id: string; email: string } | undefined;
}) {
  const me = useMe();
  const toast = useToast();
  const renderId = useId();
  const [email, setEmail] = useState<string>();
  const [renderAs, setRenderAs] = useState(true);
  const to = email ?? me.data?.email ?? '';
  const contactId = renderAs && previewContact ? previewContact.id : undefined;
  const test = useMutation({
    mutationFn: async (saveFirst: boolean) => {
      if (saveFirst) {
        try {
          await save();
        } catch {
          // Not saved: the editor shows why beside its fields, where the dialog would hide it.
          onOpenChange(false);
          return undefined;
        }
      }
      return unwrap(api.POST('/templates/{id}/test', { params: { path: { id: template.id } }, body: { email: to.trim(), ...(contactId ? { contactId } : {}) } }));
    },
    onSuccess: (r) => {
      if (!r) return;
      if (r.data.status === 'PENDING') toast({ title: `Test email sent to ${r.data.email}`, description: r.message });
      else toast({ title: 'Test email not sent', description: r.message, tone: 'bad' });
      onOpenChange(false);
    },
  });
  const err = test.error instanceof ApiError ? test.error : undefined;
  const emailError = err?.fieldMessage('email');
  const contactError = err?.fieldMessage('contactId') ?? (err?.status === 404 && /contact/i.test(err.message) ? err.message : undefined);
  const otherError = test.error && !emailError && !contactError ? test.error : undefined;
  const ready = to.trim() !== '' && !test.isPending;
  return (
    <Dialog
      open={open}
      onOpenChange={(o) => {
        if (!o) test.reset();
        onOpenChange(o);
      }}
      title="Send a test email"
      description="One email of the saved template to this address, marked as a test: it counts in no campaign or workflow stats."
      footer={
        <>
          <Button variant="secondary" onClick={() => onOpenChange(false)}>
            Cancel
          </Button>
          {dirty ? (
            <>
              <Button variant="secondary" disabled={!ready} onClick={() => test.mutate(false)}>
                Send saved version
              </Button>
              <Button disabled={!ready} onClick={() => test.mutate(true)}>
                {test.isPending ? 'Sending…' : 'Save and send test'}
              </Button>
            </>
          ) : (
            <Button disabled={!ready} onClick={() => test.mutate(false)}>
              {test.isPending ? 'Sending…' : 'Send test'}
            </Button>
          )}
        </>
      }
    >
      {dirty ? (
        <div role="status" className="flex gap-2 rounded-md border border-warn/40 bg-warn/5 px-3 py-2 text-sm">
          <TriangleAlert className="mt-0.5 size-4 shrink-0 text-warn" />
          <p>
            <span className="font-medium">You have unsaved changes.</span> The test is made from the saved version; “Save and send test” saves your changes first (workflows using
            this template send the saved version too).
          </p>
        </div>
      ) : null}
      <Field label="Send to" error={emailError}>
        <Input type="email" value={to} onChange={(e) => setEmail(e.target.value)} autoComplete="email" />
      </Field>
      <div className="grid gap-1">
        {previewContact ? (
          <label htmlFor={renderId} className="flex items-center gap-2 text-sm">
            <input id={renderId} type="checkbox" checked={renderAs} onChange={(e) => setRenderAs(e.target.checked)} className="accent-accent" />
            Fill variables with the data of {previewContact.email} (the preview&apos;s contact)
          </label>
        ) : null}
        <p className="text-xs text-fg-muted">
          {contactId
            ? 'The email still goes to the address above only.'
            : "Variables get the data of the contact with the address above, if there is one; otherwise their fallback or nothing."}
        </p>
        {contactError ? (
          <p role="alert" className="text-xs text-bad">
            {contactError}
          </p>
        ) : null}
      </div>
      {otherError ? (
        <p role="alert" className="text-sm text-bad">
          {otherError.message}
          {otherError instanceof ApiError && otherError.suggestion ? ` ${otherError.suggestion}` : ''}
        </p>
      ) : null}
    </Dialog>
  );
}
