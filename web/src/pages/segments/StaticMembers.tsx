import { useMutation, useQueryClient } from '@tanstack/react-query';
import { UserMinus, UserPlus } from 'lucide-react';
import { type FormEvent, useId, useState } from 'react';
import { ApiError, api, unwrap } from '@/api/client';
import { useProject } from '@/app/project';
import { useToast } from '@/components/toast';
import { Button } from '@/components/ui/button';
import { ConfirmDialog, Dialog } from '@/components/ui/dialog';
import { Field } from '@/components/ui/field';
import { Label, Textarea } from '@/components/ui/input';
import { formatNumber } from '@/lib/format';
import { MAX_MEMBER_EMAILS, parseEmailList } from './conditions';
import { type Segment, segmentKey, segmentsKey } from './fieldOptions';

function useAfterChange(segment: Segment) {
  const project = useProject();
  const queryClient = useQueryClient();
  return (memberCount: number) => {
    queryClient.setQueryData<Segment>(segmentKey(project.id, segment.id), (s) => (s ? { ...s, memberCount } : s));
    void queryClient.invalidateQueries({ queryKey: ['segment-members', project.id, segment.id] });
    void queryClient.invalidateQueries({ queryKey: segmentsKey(project.id) });
  };
}

const plural = (n: number, one: string, many: string) => `${formatNumber(n)} ${n === 1 ? one : many}`;

/** A static segment's "Add contacts" button and dialog: pasted emails (POST /segments/{id}/members). */
export function AddMembersButton({ segment }: { segment: Segment }) {
  const toast = useToast();
  const afterChange = useAfterChange(segment);
  const [open, setOpen] = useState(false);
  const [text, setText] = useState('');
  const [createMissing, setCreateMissing] = useState(false);
  const checkboxId = useId();
  const parsed = parseEmailList(text);
  const add = useMutation({
    mutationFn: () => unwrap(api.POST('/segments/{id}/members', { params: { path: { id: segment.id } }, body: { emails: parsed.emails, createMissing } })),
    onSuccess: (r) => {
      afterChange(r.memberCount);
      setOpen(false);
      setText('');
      const parts = [plural(r.added, 'contact added', 'contacts added')];
      if (r.created) parts.push(`${formatNumber(r.created)} of them created`);
      if (r.alreadyMembers) parts.push(plural(r.alreadyMembers, 'was already a member', 'were already members'));
      if (r.notFound) parts.push(plural(r.notFound, 'email matches no contact', 'emails match no contact'));
      toast({ title: `Added to “${segment.name}”`, description: parts.join(', '), tone: r.notFound > 0 && r.added === 0 ? 'bad' : 'ok' });
    },
  });
  const error = add.error instanceof ApiError ? add.error : undefined;
  const problem =
    parsed.invalid.length > 0
      ? `Not email addresses: ${parsed.invalid.slice(0, 3).join(', ')}${parsed.invalid.length > 3 ? '…' : ''}`
      : parsed.emails.length > MAX_MEMBER_EMAILS
        ? `At most ${formatNumber(MAX_MEMBER_EMAILS)} emails at a time`
        : (error?.fields.find((f) => f.field.startsWith('emails'))?.message ?? undefined);
  const submit = (e: FormEvent) => {
    e.preventDefault();
    if (!problem && parsed.emails.length > 0) add.mutate();
  };
  return (
    <>
      <Button onClick={() => setOpen(true)}>
        <UserPlus aria-hidden /> Add contacts
      </Button>
      <Dialog
        open={open}
        onOpenChange={(o) => {
          setOpen(o);
          if (!o) add.reset();
        }}
        title={`Add contacts to “${segment.name}”`}
        description="Paste email addresses, separated by commas, spaces or lines."
      >
        <form onSubmit={submit} className="grid gap-4">
          <Field label="Emails" error={problem} hint={parsed.emails.length ? plural(parsed.emails.length, 'address', 'addresses') : undefined}>
            <Textarea value={text} onChange={(e) => setText(e.target.value)} rows={6} autoFocus placeholder="ann@example.com, bob@example.com" />
          </Field>
          <div className="flex items-center gap-2">
            <input id={checkboxId} type="checkbox" checked={createMissing} onChange={(e) => setCreateMissing(e.target.checked)} className="accent-accent" />
            <Label htmlFor={checkboxId} className="font-normal">
              Create contacts for emails that are not contacts yet (subscribed)
            </Label>
          </div>
          {add.error && !problem ? (
            <p role="alert" className="text-sm text-bad">
              {add.error.message}
            </p>
          ) : null}
          <div className="flex justify-end gap-2">
            <Button variant="secondary" onClick={() => setOpen(false)}>
              Cancel
            </Button>
            <Button type="submit" disabled={add.isPending || parsed.emails.length === 0 || Boolean(problem)}>
              {add.isPending ? 'Adding…' : parsed.emails.length > 0 ? `Add ${plural(parsed.emails.length, 'contact', 'contacts')}` : 'Add contacts'}
            </Button>
          </div>
        </form>
      </Dialog>
    </>
  );
}

/** A member row's "Remove from segment" (DELETE /segments/{id}/members), confirmed. */
export function RemoveMemberButton({ segment, email }: { segment: Segment; email: string }) {
  const toast = useToast();
  const afterChange = useAfterChange(segment);
  const [open, setOpen] = useState(false);
  const remove = useMutation({
    mutationFn: () => unwrap(api.DELETE('/segments/{id}/members', { params: { path: { id: segment.id } }, body: { emails: [email] } })),
    onSuccess: (r) => {
      afterChange(r.memberCount);
      setOpen(false);
      toast({ title: `${email} removed from “${segment.name}”` });
    },
  });
  return (
    <>
      <Button
        variant="ghost"
        size="sm"
        aria-label={`Remove ${email} from the segment`}
        onClick={(e) => {
          e.stopPropagation();
          setOpen(true);
        }}
      >
        <UserMinus aria-hidden />
      </Button>
      <ConfirmDialog
        open={open}
        onOpenChange={(o) => {
          setOpen(o);
          if (!o) remove.reset();
        }}
        title={`Remove ${email}?`}
        description={`The contact leaves “${segment.name}”; the contact itself is kept.`}
        confirmLabel={remove.isPending ? 'Removing…' : 'Remove from segment'}
        pending={remove.isPending}
        onConfirm={() => remove.mutate()}
      >
        {remove.error ? (
          <p role="alert" className="text-sm text-bad">
            {remove.error.message}
          </p>
        ) : null}
      </ConfirmDialog>
    </>
  );
}
