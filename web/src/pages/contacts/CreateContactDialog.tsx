import { useMutation, useQueryClient } from '@tanstack/react-query';
import { type FormEvent, useState } from 'react';
import { useNavigate } from 'react-router';
import { ApiError, api, unwrap } from '@/api/client';
import { projectPath, useProject } from '@/app/project';
import { useToast } from '@/components/toast';
import { Button } from '@/components/ui/button';
import { Dialog } from '@/components/ui/dialog';
import { Field } from '@/components/ui/field';
import { Input } from '@/components/ui/input';
import { CheckBox } from './parts';

/** New contact (POST /contacts: an upsert by email; an existing address opens that contact). */
export function CreateContactDialog({ open, onOpenChange }: { open: boolean; onOpenChange: (open: boolean) => void }) {
  const project = useProject();
  const navigate = useNavigate();
  const notify = useToast();
  const queryClient = useQueryClient();
  const [email, setEmail] = useState('');
  const [subscribed, setSubscribed] = useState(true);
  const create = useMutation({
    mutationFn: () => unwrap(api.POST('/contacts', { body: { email: email.trim(), subscribed } })),
    onSuccess: (c) => {
      void queryClient.invalidateQueries({ queryKey: ['contacts'] });
      notify(c._meta.isNew ? { title: 'Contact created', description: c.email } : { title: 'This contact already existed', description: `${c.email}: its subscription was set as chosen.` });
      onOpenChange(false);
      setEmail('');
      void navigate(projectPath(project, `contacts/${c.id}`));
    },
  });
  const error = create.error instanceof ApiError ? create.error : undefined;
  const submit = (e: FormEvent) => {
    e.preventDefault();
    create.mutate();
  };
  return (
    <Dialog open={open} onOpenChange={onOpenChange} title="New contact" description="Add one person by email address; add data on the contact's page.">
      <form onSubmit={submit} className="grid gap-4">
        <Field label="Email" error={error?.fieldMessage('email') ?? (error && error.fields.length === 0 ? error.message : undefined)}>
          <Input type="email" value={email} onChange={(e) => setEmail(e.target.value)} required autoFocus autoComplete="off" />
        </Field>
        <label className="flex items-center gap-2 text-sm">
          <CheckBox checked={subscribed} onChange={setSubscribed} label="Subscribed" />
          Subscribed (receives campaigns)
        </label>
        <div className="flex justify-end gap-2">
          <Button variant="secondary" onClick={() => onOpenChange(false)}>
            Cancel
          </Button>
          <Button type="submit" disabled={create.isPending || email.trim() === ''}>
            {create.isPending ? 'Creating…' : 'Create contact'}
          </Button>
        </div>
      </form>
    </Dialog>
  );
}
