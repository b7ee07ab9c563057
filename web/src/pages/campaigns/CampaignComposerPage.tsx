import { useMutation, useQuery, useQueryClient } from '@tanstack/react-query';
import { ArrowLeft, FlaskConical, Send } from 'lucide-react';
import { type FormEvent, useEffect, useId, useMemo, useRef, useState } from 'react';
import { Link, useLocation, useNavigate, useParams, useSearchParams } from 'react-router';
import { ApiError, api, unwrap } from '@/api/client';
import type { components } from '@/api/schema';
import { projectPath, useProject } from '@/app/project';
import { ErrorState, PageHeader } from '@/components/page';
import { useToast } from '@/components/toast';
import { Button } from '@/components/ui/button';
import { Card, CardBody, CardHeader, CardTitle } from '@/components/ui/card';
import { Field } from '@/components/ui/field';
import { Input, Label, Select } from '@/components/ui/input';
import { Skeleton } from '@/components/ui/skeleton';
import { formatDateTime, formatNumber } from '@/lib/format';
import { SKIP_LEAVE_GUARD, useLeaveGuard } from '../templates/LeaveGuard';
import { ContentEditor, type EmailForm, emptyForm, EnvelopeFields } from '../templates/TemplateEditorPage';
import { allowedActions, statusLabel } from './logic';
import { ConditionBuilder } from '../segments/ConditionBuilder';
import { type Card as ConditionCard, cardToTree, emptyCard, type PathIndex, placeApiErrors, type Problem, treeToCard, validateCard } from '../segments/conditions';
import { type FieldOptions, useFieldOptions } from '../segments/fieldOptions';
import { type Campaign, recipientsNote, SendDialog, TestSendDialog, useAudienceCount, useSegments } from './shared';

type Template = components['schemas']['Template'];
type ConditionTree = components['schemas']['ConditionTree'];

/** Code of the composer's own refusal of a FILTERED audience whose rows need attention. */
const ROWS_TO_FIX = 'CONDITIONS_INCOMPLETE';

interface ComposerForm extends EmailForm {
  audienceType: Campaign['audienceType'];
  segmentId: string;
  /** The FILTERED audience in the segment builder's shape (kept while another audience is chosen). */
  card: ConditionCard;
}

const fromTemplate = (t: Template, name: string): Partial<ComposerForm> => ({
  name: name || t.name,
  subject: t.subject,
  body: t.body,
  from: t.from,
  fromName: t.fromName ?? '',
  replyTo: t.replyTo ?? '',
  type: t.type,
});

const fromCampaign = (c: Campaign): ComposerForm => ({
  name: c.name,
  description: c.description,
  subject: c.subject,
  body: c.body,
  from: c.from,
  fromName: c.fromName ?? '',
  replyTo: c.replyTo ?? '',
  type: c.type,
  audienceType: c.audienceType,
  segmentId: c.segmentId ?? '',
  card: c.audienceCondition ? treeToCard(c.audienceCondition) : emptyCard(),
});

function useDebounced<T>(value: T, ms: number): T {
  const [v, setV] = useState(value);
  useEffect(() => {
    const t = setTimeout(() => setV(value), ms);
    return () => clearTimeout(t);
  }, [value, ms]);
  return v;
}

/** "Start from a template": a search over GET /templates that copies the chosen one's content. */
function TemplatePicker({ onPick }: { onPick: (t: Template) => void }) {
  const id = useId();
  const [search, setSearch] = useState('');
  const [open, setOpen] = useState(false);
  const term = useDebounced(search.trim(), 250);
  const results = useQuery({
    queryKey: ['templates', 'picker', term],
    queryFn: () => unwrap(api.GET('/templates', { params: { query: { search: term || undefined, pageSize: 8, sort: 'updatedAt' } } })),
    enabled: open,
  });
  const pick = (t: Template) => {
    onPick(t);
    setSearch('');
    setOpen(false);
  };
  return (
    <div className="relative grid gap-1.5">
      <Label htmlFor={id}>Start from a template</Label>
      <Input
        id={id}
        role="combobox"
        aria-expanded={open}
        aria-controls={`${id}-list`}
        autoComplete="off"
        placeholder="Search templates by name or subject"
        value={search}
        onChange={(e) => {
          setSearch(e.target.value);
          setOpen(true);
        }}
        onFocus={() => setOpen(true)}
        onBlur={() => setTimeout(() => setOpen(false), 150)}
        onKeyDown={(e) => {
          if (e.key === 'Escape') setOpen(false);
          if (e.key === 'Enter') {
            e.preventDefault();
            const first = results.data?.data[0];
            if (first) pick(first);
          }
        }}
      />
      {open ? (
        <ul id={`${id}-list`} role="listbox" aria-label="Templates" className="absolute top-full z-20 mt-1 w-full rounded-md border border-border bg-surface py-1 shadow-md">
          {results.isPending ? <li className="px-3 py-1.5 text-fg-muted">Searching…</li> : null}
          {results.isError ? <li className="px-3 py-1.5 text-bad">Could not search templates</li> : null}
          {results.data && results.data.data.length === 0 ? <li className="px-3 py-1.5 text-fg-muted">No template matches</li> : null}
          {results.data?.data.map((t) => (
            <li
              key={t.id}
              role="option"
              aria-selected={false}
              className="cursor-pointer px-3 py-1.5 hover:bg-muted"
              onMouseDown={(e) => {
                e.preventDefault();
                pick(t);
              }}
            >
              <div className="truncate font-medium">{t.name || 'Untitled template'}</div>
              <div className="truncate text-xs text-fg-muted">{t.subject}</div>
            </li>
          ))}
        </ul>
      ) : null}
    </div>
  );
}

const AUDIENCES: readonly [Campaign['audienceType'], string][] = [
  ['ALL', 'All contacts'],
  ['SEGMENT', 'A segment'],
  ['FILTERED', 'Contacts matching conditions'],
];

function AudienceCard({
  form,
  set,
  error,
  fields,
  tree,
  problems,
  attempted,
  disabled,
}: {
  form: ComposerForm;
  set: (p: Partial<ComposerForm>) => void;
  error: ApiError | undefined;
  fields: FieldOptions;
  /** FILTERED: the builder's condition as the API's tree; undefined while rows need attention. */
  tree: ConditionTree | undefined;
  problems: readonly Problem[];
  /** A save was tried with rows to fix: say so under the builder. */
  attempted: boolean;
  disabled: boolean;
}) {
  const segments = useSegments();
  const audience = useAudienceCount({ type: form.type, audienceType: form.audienceType, segmentId: form.segmentId || null, audienceCondition: tree });
  const filtered = form.audienceType === 'FILTERED';
  // The count's 422 (a condition the server refuses) lands on the rows too, until a save says more.
  const countProblems = useMemo(
    () => (filtered && audience.error && problems.length === 0 ? placeApiErrors(audience.error.fields, 'audienceCondition', cardToTree(form.card, fields.types).paths, form.card.id) : []),
    [filtered, audience.error, problems.length, form.card, fields.types],
  );
  const rowsToFix = filtered && attempted ? validateCard(form.card, fields.types).length : 0;
  return (
    <Card>
      <CardHeader>
        <CardTitle>Audience</CardTitle>
        <span className={`text-sm tabular-nums ${audience.stale ? 'text-fg-muted/70' : 'text-fg-muted'}`} aria-live="polite" data-testid="audience-summary">
          {audience.count !== undefined ? (
            <>
              <strong className="text-fg" data-testid="audience-count">
                {formatNumber(audience.count)}
              </strong>{' '}
              {recipientsNote(audience.count, form.type)}
            </>
          ) : (
            (audience.hint ?? 'Counting…')
          )}
        </span>
      </CardHeader>
      <CardBody className="grid gap-3">
        <fieldset className="grid gap-2">
          <legend className="sr-only">Recipients</legend>
          {AUDIENCES.map(([value, label]) => (
            <label key={value} className="flex items-center gap-2 text-sm">
              <input type="radio" name="audience" value={value} checked={form.audienceType === value} onChange={() => set({ audienceType: value })} disabled={disabled} /> {label}
            </label>
          ))}
        </fieldset>
        {form.audienceType === 'SEGMENT' ? (
          <Field label="Segment" error={error?.fieldMessage('segmentId')}>
            <Select value={form.segmentId} onChange={(e) => set({ segmentId: e.target.value })} disabled={segments.isPending || disabled}>
              <option value="">{segments.isPending ? 'Loading segments…' : segments.data?.length ? 'Choose a segment' : 'No segments yet'}</option>
              {segments.data?.map((s) => (
                <option key={s.id} value={s.id}>
                  {s.name || 'Untitled segment'} ({formatNumber(s.memberCount)})
                </option>
              ))}
            </Select>
          </Field>
        ) : null}
        {filtered ? (
          <div className="grid gap-2">
            {fields.error ? <ErrorState error={fields.error} onRetry={fields.refetch} /> : null}
            {fields.isLoading ? (
              <div className="grid gap-2" aria-busy="true">
                <Skeleton className="h-9 w-full" />
                <Skeleton className="h-9 w-2/3" />
              </div>
            ) : (
              <ConditionBuilder value={form.card} onChange={(card) => set({ card })} fields={fields} problems={[...problems, ...countProblems]} disabled={disabled} />
            )}
            {rowsToFix > 0 ? (
              <p role="alert" className="text-sm text-bad">
                {rowsToFix === 1 ? 'One condition needs attention' : `${rowsToFix} conditions need attention`} before saving or sending.
              </p>
            ) : null}
          </div>
        ) : null}
        <p className="text-xs text-fg-muted">
          {form.type === 'MARKETING' ? 'Marketing campaigns skip unsubscribed contacts and suppressed addresses.' : 'Suppressed addresses are skipped.'} The count is who a send would reach now; recipients are fixed when sending starts.
        </p>
      </CardBody>
    </Card>
  );
}

function Composer({ campaign, initial, instanceKey }: { campaign: Campaign | undefined; initial: ComposerForm; instanceKey: string }) {
  const project = useProject();
  const navigate = useNavigate();
  const qc = useQueryClient();
  const toast = useToast();
  const [form, setForm] = useState<ComposerForm>(initial);
  const [saved, setSaved] = useState<ComposerForm>(initial);
  const [sending, setSending] = useState(false);
  const [testing, setTesting] = useState(false);
  const [localError, setLocalError] = useState<ApiError>();
  const segments = useSegments();
  // A new campaign saved by "Send…" or "Send test" before the URL changes: later saves update it.
  const createdId = useRef<string | undefined>(undefined);
  const set = (patch: Partial<ComposerForm>) => setForm((f) => ({ ...f, ...patch }));
  const dirty = JSON.stringify(form) !== JSON.stringify(saved);
  const leaveGuard = useLeaveGuard(dirty, 'campaign');
  const fields = useFieldOptions();
  // Where each builder row landed in the last saved tree (to place the API's 422 on its row).
  const [paths, setPaths] = useState<PathIndex>(new Map());
  const [attempted, setAttempted] = useState(false);
  const filtered = form.audienceType === 'FILTERED';
  const local = useMemo(() => (filtered ? validateCard(form.card, fields.types) : []), [filtered, form.card, fields.types]);
  const tree = useMemo(() => (filtered && local.length === 0 ? cardToTree(form.card, fields.types).tree : undefined), [filtered, local.length, form.card, fields.types]);

  const body = (f: ComposerForm) => ({
    name: f.name,
    description: f.description,
    subject: f.subject,
    body: f.body,
    from: f.from.trim(),
    fromName: f.fromName.trim() || null,
    replyTo: f.replyTo.trim() || null,
    type: f.type,
    audienceType: f.audienceType,
    // The API clears the field the audience type does not use.
    ...(f.audienceType === 'FILTERED' ? { audienceCondition: cardToTree(f.card, fields.types).tree } : { segmentId: f.audienceType === 'SEGMENT' ? f.segmentId || null : null }),
  });

  const save = useMutation({
    mutationFn: async (f: ComposerForm): Promise<Campaign> => {
      if (!f.from.trim()) throw new ApiError(422, 'VALIDATION_ERROR', 'A campaign needs a From address', undefined, [{ field: 'from', message: 'A campaign needs a From address' }]);
      if (f.audienceType === 'SEGMENT' && !f.segmentId) throw new ApiError(422, 'VALIDATION_ERROR', 'Choose a segment', undefined, [{ field: 'segmentId', message: 'Choose a segment' }]);
      if (f.audienceType === 'FILTERED') {
        setAttempted(true);
        if (validateCard(f.card, fields.types).length > 0) throw new ApiError(422, ROWS_TO_FIX, 'Some conditions need attention', undefined, [{ field: 'audienceCondition', message: 'Some conditions need attention' }]);
        setPaths(cardToTree(f.card, fields.types).paths);
      }
      const id = campaign?.id ?? createdId.current;
      if (id) return unwrap(api.PUT('/campaigns/{id}', { params: { path: { id } }, body: body(f) }));
      const created = await unwrap(api.POST('/campaigns', { body: body(f) }));
      createdId.current = created.data.id;
      return created.data;
    },
    onSuccess: (c, submitted) => {
      qc.setQueryData(['campaigns', c.id], c);
      void qc.invalidateQueries({ queryKey: ['campaigns', 'list'] });
      setSaved(submitted);
      // A new campaign gets its own address; the same composer stays (open dialogs too).
      if (!campaign) navigate(projectPath(project, `campaigns/${c.id}/edit`), { replace: true, state: { ...SKIP_LEAVE_GUARD, composerKey: instanceKey } });
    },
  });

  /** Saves pending changes and answers the campaign's id (for send and test). */
  const prepare = async (): Promise<string> => {
    const id = campaign?.id ?? createdId.current;
    if (id && !dirty) return id;
    const c = await save.mutateAsync(form);
    return c.id;
  };

  const submit = (e: FormEvent) => {
    e.preventDefault();
    setLocalError(undefined);
    save.mutate(form, {
      onSuccess: () => toast({ title: campaign ? 'Campaign saved' : 'Draft saved' }),
    });
  };

  const openDialog = async (which: 'send' | 'test') => {
    setLocalError(undefined);
    try {
      // Checked (and saved) before the dialog opens, so its errors land next to their fields.
      await prepare();
      if (which === 'send') setSending(true);
      else setTesting(true);
    } catch (e) {
      if (e instanceof ApiError) setLocalError(e);
    }
  };

  const err = save.error instanceof ApiError ? save.error : localError;
  const shownError = err && !err.fields.length && !(err.status === 403 && /sender domain/i.test(err.message)) ? err : undefined;
  const segmentName = segments.data?.find((s) => s.id === form.segmentId)?.name;
  const remote = err && err.code !== ROWS_TO_FIX && filtered ? placeApiErrors(err.fields, 'audienceCondition', paths, form.card.id) : [];
  const problems = attempted ? [...local, ...remote] : remote;
  const canSend = !campaign || allowedActions(campaign.status).send;

  return (
    <form onSubmit={submit} aria-label="Campaign" noValidate>
      <Link to={projectPath(project, campaign && campaign.status !== 'DRAFT' ? `campaigns/${campaign.id}` : 'campaigns')} className="mb-2 inline-flex items-center gap-1 text-sm text-fg-muted hover:text-fg">
        <ArrowLeft className="size-4" /> {campaign && campaign.status !== 'DRAFT' ? 'Campaign' : 'Campaigns'}
      </Link>
      <PageHeader
        title={campaign ? campaign.name || 'Untitled campaign' : 'New campaign'}
        description={
          campaign?.status === 'SCHEDULED' && campaign.scheduledFor
            ? `${statusLabel(campaign.status)} for ${formatDateTime(campaign.scheduledFor)}; changes apply to that send.`
            : 'Write the email or start from a template, choose who receives it, then send or schedule.'
        }
        actions={
          <>
            {dirty && campaign ? <span className="text-xs text-fg-muted">Unsaved changes</span> : null}
            <Button variant="secondary" disabled={save.isPending} onClick={() => void openDialog('test')}>
              <FlaskConical /> Send test
            </Button>
            <Button type="submit" variant="secondary" disabled={save.isPending || (Boolean(campaign) && !dirty)}>
              {save.isPending ? 'Saving…' : campaign ? 'Save' : 'Save draft'}
            </Button>
            {canSend ? (
              <Button disabled={save.isPending} onClick={() => void openDialog('send')}>
                <Send /> Send…
              </Button>
            ) : null}
          </>
        }
      />
      {shownError ? (
        <div className="mb-4">
          <ErrorState error={shownError} />
        </div>
      ) : null}
      {/* The condition builder needs the width: its audience card goes under the envelope then. */}
      <div className={filtered ? 'mb-4 grid gap-4' : 'mb-4 grid gap-4 lg:grid-cols-[2fr_1fr]'}>
        <Card>
          <CardBody className="grid gap-4">
            <div className="grid gap-4 md:grid-cols-2">
              <Field label="Campaign name" error={err?.fieldMessage('name')} hint="Internal: recipients never see it">
                <Input value={form.name} onChange={(e) => set({ name: e.target.value })} maxLength={255} />
              </Field>
              <TemplatePicker
                onPick={(t) => {
                  set(fromTemplate(t, form.name));
                  toast({ title: `Copied “${t.name || 'Untitled template'}” into the campaign` });
                }}
              />
            </div>
            <EnvelopeFields form={form} set={set} error={err} />
          </CardBody>
        </Card>
        <AudienceCard form={form} set={set} error={err} fields={fields} tree={tree} problems={problems} attempted={attempted} disabled={save.isPending} />
      </div>
      <ContentEditor subject={form.subject} body={form.body} onBody={(b) => set({ body: b })} bodyError={err?.fieldMessage('body')} />
      <SendDialog
        open={sending}
        onOpenChange={setSending}
        campaign={{ name: form.name, subject: form.subject, type: form.type, audienceType: form.audienceType, segmentId: form.segmentId || null, audienceCondition: tree ?? null }}
        segmentName={segmentName}
        prepare={prepare}
        onSent={(id) => navigate(projectPath(project, `campaigns/${id}`), { state: SKIP_LEAVE_GUARD })}
      />
      <TestSendDialog open={testing} onOpenChange={setTesting} prepare={prepare} />
      {leaveGuard}
    </form>
  );
}

function Loading() {
  return (
    <div className="grid gap-4" aria-busy="true">
      <Skeleton className="h-8 w-64" />
      <Skeleton className="h-48 w-full" />
      <Skeleton className="h-96 w-full" />
    </div>
  );
}

/** campaigns/new (optionally ?templateId=…) and campaigns/:campaignId/edit. */
export function CampaignComposerPage() {
  const { campaignId } = useParams();
  const [params] = useSearchParams();
  const location = useLocation();
  const state: unknown = location.state;
  const composerKey = typeof state === 'object' && state !== null && typeof (state as { composerKey?: unknown }).composerKey === 'string' ? (state as { composerKey: string }).composerKey : undefined;
  const project = useProject();
  const templateId = campaignId ? undefined : (params.get('templateId') ?? undefined);
  const campaign = useQuery({
    queryKey: ['campaigns', campaignId],
    queryFn: () => unwrap(api.GET('/campaigns/{id}', { params: { path: { id: campaignId ?? '' } } })),
    enabled: Boolean(campaignId),
  });
  const template = useQuery({
    queryKey: ['templates', templateId],
    queryFn: () => unwrap(api.GET('/templates/{id}', { params: { path: { id: templateId ?? '' } } })),
    enabled: Boolean(templateId),
  });
  if (!campaignId) {
    if (templateId && template.isError) return <ErrorState error={template.error} onRetry={() => void template.refetch()} />;
    if (templateId && !template.data) return <Loading />;
    const initial: ComposerForm = { ...emptyForm, audienceType: 'ALL', segmentId: '', card: emptyCard(), ...(template.data ? fromTemplate(template.data, '') : {}) };
    const key = `new-${templateId ?? ''}`;
    return <Composer key={key} instanceKey={key} campaign={undefined} initial={initial} />;
  }
  if (campaign.isError) return <ErrorState error={campaign.error} onRetry={() => void campaign.refetch()} />;
  if (!campaign.data) return <Loading />;
  const c = campaign.data;
  if (!allowedActions(c.status).edit)
    return (
      <div className="grid gap-3">
        <PageHeader title={c.name || 'Untitled campaign'} description={`This campaign is ${statusLabel(c.status).toLowerCase()}: it can no longer be edited. Duplicate it to send a changed copy.`} />
        <Link to={projectPath(project, `campaigns/${c.id}`)} className="text-accent hover:underline">
          Open the campaign
        </Link>
      </div>
    );
  // Just created by this composer: the same instance goes on (its key came with the navigation).
  const key = composerKey ?? c.id;
  return <Composer key={key} instanceKey={key} campaign={c} initial={fromCampaign(c)} />;
}
