import { keepPreviousData, useQuery } from '@tanstack/react-query';
import { Copy, MoreHorizontal, Plus, Search, Trash2 } from 'lucide-react';
import { DropdownMenu as M } from 'radix-ui';
import { useEffect, useState } from 'react';
import { Link, useNavigate } from 'react-router';
import { api, unwrap } from '@/api/client';
import type { components } from '@/api/schema';
import { projectPath, useProject } from '@/app/project';
import { EmptyState, ErrorState, PageHeader } from '@/components/page';
import { Badge } from '@/components/ui/badge';
import { Button, buttonVariants } from '@/components/ui/button';
import { Input, Label, Select } from '@/components/ui/input';
import { SkeletonRows, Table, TBody, TD, TH, THead, TR } from '@/components/ui/table';
import { formatDateTime, formatRelative } from '@/lib/format';
import { useUrlParam } from '@/lib/url-state';
import { pageParam, Pager } from './Pager';
import { DeleteTemplateDialog, useDuplicateTemplate } from './TemplateActions';
import { useSetUrlParams } from '@/lib/url-state';

type Template = components['schemas']['Template'];
const TYPES = ['MARKETING', 'TRANSACTIONAL', 'HEADLESS'] as const;
type TemplateType = (typeof TYPES)[number];
const isType = (v: string | undefined): v is TemplateType => (TYPES as readonly string[]).includes(v ?? '');
export const typeLabel = (t: TemplateType) => t.charAt(0) + t.slice(1).toLowerCase();

const menuContent = 'z-50 min-w-44 rounded-md border border-border bg-surface p-1 shadow-md';
const menuItem = 'flex cursor-default items-center gap-2 rounded px-2 py-1.5 text-sm outline-none data-[highlighted]:bg-muted [&_svg]:size-4';

function RowMenu({ template }: { template: Template }) {
  const project = useProject();
  const navigate = useNavigate();
  const [deleting, setDeleting] = useState(false);
  const duplicate = useDuplicateTemplate((copy) => navigate(projectPath(project, `templates/${copy.id}`)));
  return (
    <>
      <M.Root>
        <M.Trigger className={buttonVariants({ variant: 'ghost', size: 'icon' })} aria-label={`Actions for ${template.name || 'Untitled template'}`} onClick={(e) => e.stopPropagation()}>
          <MoreHorizontal />
        </M.Trigger>
        <M.Portal>
          <M.Content align="end" className={menuContent} onClick={(e) => e.stopPropagation()}>
            <M.Item className={menuItem} disabled={duplicate.isPending} onSelect={() => duplicate.mutate(template.id)}>
              <Copy /> Duplicate
            </M.Item>
            <M.Item className={`${menuItem} text-bad`} onSelect={() => setDeleting(true)}>
              <Trash2 /> Delete…
            </M.Item>
          </M.Content>
        </M.Portal>
      </M.Root>
      <DeleteTemplateDialog template={template} open={deleting} onOpenChange={setDeleting} onDeleted={() => undefined} />
    </>
  );
}

/** Templates: the project's reusable emails, searchable and filtered by type (GET /templates). */
export function TemplatesPage() {
  const project = useProject();
  const navigate = useNavigate();
  const [search] = useUrlParam('search');
  const [type] = useUrlParam('type');
  const [pageValue, setPage] = useUrlParam('page');
  const setParams = useSetUrlParams();
  const page = pageParam(pageValue);
  const [draft, setDraft] = useState(search ?? '');
  // The URL changed from outside (back button, a link): the box follows it.
  const [shown, setShown] = useState(search);
  if (shown !== search) {
    setShown(search);
    setDraft(search ?? '');
  }
  useEffect(() => {
    const t = setTimeout(() => {
      if (draft.trim() !== (search ?? '')) setParams({ search: draft.trim(), page: undefined }, { replace: true });
    }, 300);
    return () => clearTimeout(t);
  }, [draft, search, setParams]);

  const query = {
    page,
    pageSize: 25,
    search: search || undefined,
    type: isType(type) ? type : undefined,
    sort: 'updatedAt' as const,
  };
  const list = useQuery({
    queryKey: ['templates', 'list', query],
    queryFn: () => unwrap(api.GET('/templates', { params: { query } })),
    placeholderData: keepPreviousData,
  });
  const newButton = (
    <Link to={projectPath(project, 'templates/new')} className={buttonVariants()}>
      <Plus /> New template
    </Link>
  );
  const filtered = Boolean(search || isType(type));

  return (
    <div>
      <PageHeader title="Templates" description="Reusable emails with {{variables}} for campaigns, workflows and the send API." actions={newButton} />
      <div className="mb-3 flex flex-wrap items-end gap-3">
        <div className="relative">
          <Label htmlFor="template-search" className="sr-only">
            Search templates
          </Label>
          <Search className="pointer-events-none absolute top-2.5 left-2.5 size-4 text-fg-muted" />
          <Input id="template-search" type="search" placeholder="Search name, description, subject" className="w-80 pl-8" value={draft} onChange={(e) => setDraft(e.target.value)} />
        </div>
        <div>
          <Label htmlFor="template-type" className="sr-only">
            Type
          </Label>
          <Select
            id="template-type"
            className="w-44"
            value={isType(type) ? type : ''}
            onChange={(e) => setParams({ type: e.target.value, page: undefined })}
          >
            <option value="">All types</option>
            {TYPES.map((t) => (
              <option key={t} value={t}>
                {typeLabel(t)}
              </option>
            ))}
          </Select>
        </div>
      </div>
      {list.isError ? (
        <ErrorState error={list.error} onRetry={() => void list.refetch()} />
      ) : list.data && list.data.total === 0 && !filtered ? (
        <EmptyState title="No templates yet" description="A template is an email written once and sent many times, filled with each contact's data." action={newButton} />
      ) : (
        <>
          <Table aria-label="Templates">
            <THead>
              <tr>
                <TH>Name</TH>
                <TH>Subject</TH>
                <TH>Type</TH>
                <TH>From</TH>
                <TH>Updated</TH>
                <TH>
                  <span className="sr-only">Actions</span>
                </TH>
              </tr>
            </THead>
            <TBody>
              {list.isPending ? <SkeletonRows columns={6} /> : null}
              {list.data?.data.map((t) => (
                <TR key={t.id} onClick={() => navigate(projectPath(project, `templates/${t.id}`))}>
                  <TD className="font-medium">
                    <Link to={projectPath(project, `templates/${t.id}`)} onClick={(e) => e.stopPropagation()} className="hover:underline">
                      {t.name || 'Untitled template'}
                    </Link>
                  </TD>
                  <TD className="max-w-80 truncate text-fg-muted">{t.subject}</TD>
                  <TD>
                    <Badge tone={t.type === 'MARKETING' ? 'accent' : 'neutral'}>{typeLabel(t.type)}</Badge>
                  </TD>
                  <TD className="text-fg-muted">{t.from}</TD>
                  <TD className="whitespace-nowrap text-fg-muted">
                    <time dateTime={t.updatedAt} title={formatDateTime(t.updatedAt)}>
                      {formatRelative(t.updatedAt)}
                    </time>
                  </TD>
                  <TD className="w-10 text-right">
                    <RowMenu template={t} />
                  </TD>
                </TR>
              ))}
              {list.data && list.data.data.length === 0 ? (
                <tr>
                  <td colSpan={6} className="px-3 py-8 text-center text-fg-muted">
                    No template matches these filters.{' '}
                    <Button
                      variant="ghost"
                      size="sm"
                      onClick={() => {
                        setDraft('');
                        setParams({ search: undefined, type: undefined, page: undefined });
                      }}
                    >
                      Clear filters
                    </Button>
                  </td>
                </tr>
              ) : null}
            </TBody>
          </Table>
          {list.data ? <Pager page={list.data.page} totalPages={list.data.totalPages} total={list.data.total} noun="template" onPage={(p) => setPage(p === 1 ? undefined : String(p))} /> : null}
        </>
      )}
    </div>
  );
}
