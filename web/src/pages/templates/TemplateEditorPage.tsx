import { useMutation, useQuery, useQueryClient } from '@tanstack/react-query';
import { ArrowLeft, Copy, FlaskConical, ImagePlus, MoreHorizontal, Send, Trash2, TriangleAlert } from 'lucide-react';
import { DropdownMenu as M } from 'radix-ui';
import { type FormEvent, useMemo, useRef, useState } from 'react';
import { Link, useNavigate, useParams } from 'react-router';
import { ApiError, api, toApiError, unwrap } from '@/api/client';
import type { components } from '@/api/schema';
import { projectPath, useProject } from '@/app/project';
import { ErrorState, PageHeader } from '@/components/page';
import { useToast } from '@/components/toast';
import { Button, buttonVariants } from '@/components/ui/button';
import { Card, CardBody } from '@/components/ui/card';
import { Field } from '@/components/ui/field';
import { Input, Select } from '@/components/ui/input';
import { Skeleton } from '@/components/ui/skeleton';
import { HtmlEditor, type HtmlEditorHandle } from './HtmlEditor';
import { SKIP_LEAVE_GUARD, useLeaveGuard } from './LeaveGuard';
import { EmailPreview } from './Preview';
import { DeleteTemplateDialog, TemplateTestDialog, useDuplicateTemplate } from './TemplateActions';
import { unknownVariables } from './variables';

type Template = components['schemas']['Template'];
type TemplateType = Template['type'];
type PreviewContact = components['schemas']['Contact'];

export interface EmailForm {
  name: string;
  description: string;
  subject: string;
  body: string;
  from: string;
  fromName: string;
  replyTo: string;
  type: TemplateType;
}

export const emptyForm: EmailForm = { name: '', description: '', subject: '', body: '', from: '', fromName: '', replyTo: '', type: 'MARKETING' };

/** The data keys of the project (GET /contacts/fields), for autocomplete and unknown-variable warnings. */
export function useDataKeys(): string[] {
  const fields = useQuery({ queryKey: ['contacts', 'fields'], queryFn: () => unwrap(api.GET('/contacts/fields')) });
  return useMemo(() => (fields.data?.data ?? []).filter((f) => !f.standard).map((f) => f.key), [fields.data]);
}

/** The project's verified sender domains, offered for the From address. */
export function useVerifiedDomains(): string[] {
  const project = useProject();
  const domains = useQuery({
    queryKey: ['domains', project.id],
    queryFn: () => unwrap(api.GET('/domains/project/{projectId}', { params: { path: { projectId: project.id } } })),
  });
  return useMemo(() => (domains.data ?? []).filter((d) => d.verified).map((d) => d.domain), [domains.data]);
}

/** A 403 about the sender domain belongs next to the From field. */
export function fromError(error: unknown): string | undefined {
  if (!(error instanceof ApiError)) return undefined;
  return error.fieldMessage('from') ?? (error.status === 403 && /sender domain/i.test(error.message) ? error.message : undefined);
}

/** Uploads an image (POST /uploads/image, multipart field "image"); resolves to its public URL and name. */
export async function uploadImage(file: File): Promise<{ url: string; filename: string; width: number; height: number }> {
  const form = new FormData();
  form.append('image', file, file.name);
  const { data, error, response } = await api.POST('/uploads/image', { body: {}, bodySerializer: () => form });
  if (!response.ok || !data) throw toApiError(response.status, error);
  return data;
}

/** The HTML inserted for an uploaded image: scaled to the email's width, with its name as alt text. */
export const imageTag = (img: { url: string; filename: string; width: number }): string =>
  `<img src="${img.url}" alt="${img.filename.replace(/\.[a-z0-9]+$/i, '').replace(/["<>&]/g, '')}" width="${Math.min(img.width, 600)}" style="max-width:100%;height:auto" />`;

/**
 * The subject, HTML body (CodeMirror) and live preview shared by the template editor and the
 * campaign composer, with the image upload and the unknown-variable warnings.
 */
export function ContentEditor({
  subject,
  body,
  onBody,
  bodyError,
  onPreviewContact,
}: {
  subject: string;
  body: string;
  onBody: (v: string) => void;
  bodyError?: string | undefined;
  /** Told the contact the preview is rendered as (undefined: none). */
  onPreviewContact?: ((contact: PreviewContact | undefined) => void) | undefined;
}) {
  const keys = useDataKeys();
  const editor = useRef<HtmlEditorHandle>(null);
  const file = useRef<HTMLInputElement>(null);
  const toast = useToast();
  const upload = useMutation({
    mutationFn: uploadImage,
    onSuccess: (img) => editor.current?.insert(imageTag(img)),
    onError: (e) => toast({ title: 'Could not upload the image', description: e.message, tone: 'bad' }),
  });
  const unknown = useMemo(() => unknownVariables([subject, body], keys), [subject, body, keys]);
  return (
    <div className="grid gap-4 xl:grid-cols-2">
      <div className="flex min-w-0 flex-col gap-2">
        <div className="flex items-center justify-between gap-2">
          <span className="text-sm font-medium" id="body-label">
            HTML body
          </span>
          <div className="flex items-center gap-2">
            <span className="hidden text-xs text-fg-muted sm:inline">Type {'{{'} for variables</span>
            <input
              ref={file}
              type="file"
              accept="image/png,image/jpeg,image/gif,image/webp"
              className="sr-only"
              aria-label="Image file"
              tabIndex={-1}
              onChange={(e) => {
                const f = e.target.files?.[0];
                if (f) upload.mutate(f);
                e.target.value = '';
              }}
            />
            <Button size="sm" variant="secondary" disabled={upload.isPending} onClick={() => file.current?.click()}>
              <ImagePlus /> {upload.isPending ? 'Uploading…' : 'Insert image'}
            </Button>
          </div>
        </div>
        <div className="h-[560px]">
          <HtmlEditor ref={editor} value={body} onChange={onBody} knownKeys={keys} label="HTML body" />
        </div>
        {bodyError ? (
          <p role="alert" className="text-xs text-bad">
            {bodyError}
          </p>
        ) : null}
        {unknown.length > 0 ? (
          <div role="status" className="flex gap-2 rounded-md border border-warn/40 bg-warn/5 px-3 py-2 text-sm">
            <TriangleAlert className="mt-0.5 size-4 shrink-0 text-warn" />
            <div>
              <p className="font-medium text-warn">Unknown variables</p>
              <p className="text-fg-muted">
                No contact has {unknown.length === 1 ? 'this data key' : 'these data keys'}: they render empty unless the tag has a fallback ({'{{key ?? "default"}}'}).
              </p>
              <ul className="mt-1 flex flex-wrap gap-1" aria-label="Unknown variables">
                {unknown.map((k) => (
                  <li key={k}>
                    <code className="rounded bg-muted px-1 py-0.5 text-xs">{`{{${k}}}`}</code>
                  </li>
                ))}
              </ul>
            </div>
          </div>
        ) : null}
      </div>
      <div className="min-w-0">
        <EmailPreview subject={subject} body={body} onContact={onPreviewContact} />
      </div>
    </div>
  );
}

/** Sender, subject, name and type fields shared by templates and campaigns. */
export function EnvelopeFields({ form, set, error }: { form: EmailForm; set: (patch: Partial<EmailForm>) => void; error: unknown }) {
  const domains = useVerifiedDomains();
  const api = error instanceof ApiError ? error : undefined;
  const listId = 'verified-sender-domains';
  return (
    <div className="grid gap-4 md:grid-cols-2 lg:grid-cols-3">
      <div className="md:col-span-1 lg:col-span-2">
        <Field label="Subject" error={api?.fieldMessage('subject')} hint="Variables work here too, e.g. Hello {{firstName ?? &quot;there&quot;}}">
          <Input value={form.subject} onChange={(e) => set({ subject: e.target.value })} maxLength={998} />
        </Field>
      </div>
      <Field label="Type" error={api?.fieldMessage('type')} hint="Marketing emails go to subscribed contacts only and carry an unsubscribe link">
        <Select value={form.type} onChange={(e) => set({ type: e.target.value as TemplateType })}>
          <option value="MARKETING">Marketing</option>
          <option value="TRANSACTIONAL">Transactional</option>
          <option value="HEADLESS">Headless</option>
        </Select>
      </Field>
      <Field
        label="From address"
        error={fromError(error)}
        hint={domains.length > 0 ? `On a verified domain: ${domains.join(', ')}` : 'Its domain must be verified for this project (Domains)'}
      >
        <Input type="email" value={form.from} onChange={(e) => set({ from: e.target.value })} list={listId} placeholder={domains[0] ? `hello@${domains[0]}` : 'hello@example.com'} required />
      </Field>
      <datalist id={listId}>
        {domains.map((d) => (
          <option key={d} value={`hello@${d}`} />
        ))}
      </datalist>
      <Field label="From name" error={api?.fieldMessage('fromName')}>
        <Input value={form.fromName} onChange={(e) => set({ fromName: e.target.value })} maxLength={255} />
      </Field>
      <Field label="Reply-To" error={api?.fieldMessage('replyTo')}>
        <Input type="email" value={form.replyTo} onChange={(e) => set({ replyTo: e.target.value })} />
      </Field>
    </div>
  );
}

const toForm = (t: Template): EmailForm => ({
  name: t.name,
  description: t.description,
  subject: t.subject,
  body: t.body,
  from: t.from,
  fromName: t.fromName ?? '',
  replyTo: t.replyTo ?? '',
  type: t.type,
});

const toBody = (f: EmailForm) => ({
  name: f.name,
  description: f.description,
  subject: f.subject,
  body: f.body,
  from: f.from.trim(),
  fromName: f.fromName.trim() || null,
  replyTo: f.replyTo.trim() || null,
  type: f.type,
});

const menuContent = 'z-50 min-w-44 rounded-md border border-border bg-surface p-1 shadow-md';
const menuItem = 'flex cursor-default items-center gap-2 rounded px-2 py-1.5 text-sm outline-none data-[highlighted]:bg-muted [&_svg]:size-4';

function Editor({ template }: { template: Template | undefined }) {
  const project = useProject();
  const navigate = useNavigate();
  const qc = useQueryClient();
  const toast = useToast();
  const [form, setForm] = useState<EmailForm>(template ? toForm(template) : emptyForm);
  const [saved, setSaved] = useState<EmailForm>(form);
  const [deleting, setDeleting] = useState(false);
  const [testing, setTesting] = useState(false);
  const [previewContact, setPreviewContact] = useState<PreviewContact>();
  const [localError, setLocalError] = useState<string>();
  const set = (patch: Partial<EmailForm>) => setForm((f) => ({ ...f, ...patch }));
  const dirty = JSON.stringify(form) !== JSON.stringify(saved);
  const leaveGuard = useLeaveGuard(dirty, 'template');

  const save = useMutation({
    mutationFn: async (f: EmailForm) =>
      template
        ? unwrap(api.PATCH('/templates/{id}', { params: { path: { id: template.id } }, body: toBody(f) }))
        : unwrap(api.POST('/templates', { body: toBody(f) })),
    onSuccess: (t, submitted) => {
      qc.setQueryData(['templates', t.id], t);
      void qc.invalidateQueries({ queryKey: ['templates', 'list'] });
      setSaved(submitted);
      toast({ title: template ? 'Template saved' : 'Template created' });
      if (!template) navigate(projectPath(project, `templates/${t.id}`), { replace: true, state: SKIP_LEAVE_GUARD });
    },
  });
  const duplicate = useDuplicateTemplate((copy) => navigate(projectPath(project, `templates/${copy.id}`)));

  const submit = (e: FormEvent) => {
    e.preventDefault();
    if (!form.from.trim()) {
      setLocalError('A template needs a From address');
      return;
    }
    setLocalError(undefined);
    save.mutate(form);
  };
  const err = save.error instanceof ApiError ? save.error : undefined;
  const shownError = save.error && !err?.fields.length && !fromError(save.error) ? save.error : undefined;

  return (
    <form onSubmit={submit} aria-label="Template" noValidate>
      <Link to={projectPath(project, 'templates')} className="mb-2 inline-flex items-center gap-1 text-sm text-fg-muted hover:text-fg">
        <ArrowLeft className="size-4" /> Templates
      </Link>
      <PageHeader
        title={template ? template.name || 'Untitled template' : 'New template'}
        description={template ? 'Edit the email; the preview on the right is rendered as the chosen contact.' : 'Write the email once; each recipient gets it filled with their data.'}
        actions={
          <>
            {dirty ? <span className="text-xs text-fg-muted">Unsaved changes</span> : null}
            {template ? (
              <Button variant="secondary" onClick={() => setTesting(true)}>
                <FlaskConical /> Send test
              </Button>
            ) : null}
            {template ? (
              <Link to={`${projectPath(project, 'campaigns/new')}?templateId=${template.id}`} className={buttonVariants({ variant: 'secondary' })}>
                <Send /> Use in campaign
              </Link>
            ) : null}
            <Button type="submit" disabled={save.isPending || (!!template && !dirty)}>
              {save.isPending ? 'Saving…' : template ? 'Save' : 'Create template'}
            </Button>
            {template ? (
              <M.Root>
                <M.Trigger className={buttonVariants({ variant: 'ghost', size: 'icon' })} aria-label="More actions">
                  <MoreHorizontal />
                </M.Trigger>
                <M.Portal>
                  <M.Content align="end" className={menuContent}>
                    <M.Item className={menuItem} disabled={duplicate.isPending} onSelect={() => duplicate.mutate(template.id)}>
                      <Copy /> Duplicate
                    </M.Item>
                    <M.Item className={`${menuItem} text-bad`} onSelect={() => setDeleting(true)}>
                      <Trash2 /> Delete…
                    </M.Item>
                  </M.Content>
                </M.Portal>
              </M.Root>
            ) : null}
          </>
        }
      />
      {shownError ? (
        <div className="mb-4">
          <ErrorState error={shownError} />
        </div>
      ) : null}
      <Card className="mb-4">
        <CardBody className="grid gap-4">
          <div className="grid gap-4 md:grid-cols-2">
            <Field label="Name" error={err?.fieldMessage('name')} hint="Internal: recipients never see it">
              <Input value={form.name} onChange={(e) => set({ name: e.target.value })} maxLength={255} autoFocus={!template} />
            </Field>
            <Field label="Description" error={err?.fieldMessage('description')} hint="Internal note">
              <Input value={form.description} onChange={(e) => set({ description: e.target.value })} maxLength={2000} />
            </Field>
          </div>
          <EnvelopeFields form={form} set={set} error={save.error ?? (localError ? new ApiError(422, 'VALIDATION_ERROR', localError, undefined, [{ field: 'from', message: localError }]) : undefined)} />
        </CardBody>
      </Card>
      <ContentEditor subject={form.subject} body={form.body} onBody={(body) => set({ body })} bodyError={err?.fieldMessage('body')} onPreviewContact={setPreviewContact} />
      {template ? (
        <TemplateTestDialog
          template={template}
          open={testing}
          onOpenChange={setTesting}
          dirty={dirty}
          save={() => save.mutateAsync(form)}
          previewContact={previewContact}
        />
      ) : null}
      {template ? (
        <DeleteTemplateDialog
          template={template}
          open={deleting}
          onOpenChange={setDeleting}
          onDeleted={() => navigate(projectPath(project, 'templates'), { state: SKIP_LEAVE_GUARD })}
        />
      ) : null}
      {leaveGuard}
    </form>
  );
}

/** templates/new and templates/:templateId: the editor with its live preview. */
export function TemplateEditorPage() {
  const { templateId } = useParams();
  const isNew = !templateId || templateId === 'new';
  const template = useQuery({
    queryKey: ['templates', templateId],
    queryFn: () => unwrap(api.GET('/templates/{id}', { params: { path: { id: templateId ?? '' } } })),
    enabled: !isNew,
  });
  if (isNew) return <Editor key="new" template={undefined} />;
  if (template.isError) return <ErrorState error={template.error} onRetry={() => void template.refetch()} />;
  if (!template.data)
    return (
      <div className="grid gap-4" aria-busy="true">
        <Skeleton className="h-8 w-64" />
        <Skeleton className="h-40 w-full" />
        <Skeleton className="h-96 w-full" />
      </div>
    );
  return <Editor key={template.data.id} template={template.data} />;
}
