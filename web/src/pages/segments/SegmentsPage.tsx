import { useQuery } from '@tanstack/react-query';
import { Plus, Search } from 'lucide-react';
import { Link, useNavigate } from 'react-router';
import { api, unwrap } from '@/api/client';
import { projectPath, useProject } from '@/app/project';
import { EmptyState, ErrorState, PageHeader } from '@/components/page';
import { Badge } from '@/components/ui/badge';
import { buttonVariants } from '@/components/ui/button';
import { Input } from '@/components/ui/input';
import { SkeletonRows, Table, TBody, TD, TH, THead, TR } from '@/components/ui/table';
import { formatDateTime, formatNumber, formatRelative } from '@/lib/format';
import { useUrlParam } from '@/lib/url-state';
import { segmentsKey } from './fieldOptions';
import { Status } from './Status';

/** /segments: every segment of the project (the API lists them all, newest first). */
export function SegmentsPage() {
  const project = useProject();
  const navigate = useNavigate();
  const [search, setSearch] = useUrlParam('search');
  const segments = useQuery({ queryKey: segmentsKey(project.id), queryFn: () => unwrap(api.GET('/segments')) });
  const needle = (search ?? '').trim().toLowerCase();
  const rows = (segments.data ?? []).filter((s) => !needle || s.name.toLowerCase().includes(needle) || s.description.toLowerCase().includes(needle));
  const newButton = (
    <Link to={projectPath(project, 'segments/new')} className={buttonVariants()}>
      <Plus aria-hidden /> New segment
    </Link>
  );

  return (
    <>
      <PageHeader title="Segments" description="Groups of contacts by their data, events and email engagement, for campaigns and workflows." actions={newButton} />
      {segments.error ? (
        <ErrorState error={segments.error} onRetry={() => void segments.refetch()} />
      ) : segments.data && segments.data.length === 0 ? (
        <EmptyState
          title="No segments yet"
          description="A segment describes contacts by conditions (plan is pro, opened an email this week) and stays up to date as they change."
          action={newButton}
        />
      ) : (
        <div className="grid gap-3">
          <div className="relative max-w-xs">
            <Search aria-hidden className="pointer-events-none absolute top-2.5 left-2.5 size-4 text-fg-muted" />
            <Input
              type="search"
              aria-label="Search segments"
              placeholder="Search segments"
              className="pl-8"
              value={search ?? ''}
              onChange={(e) => setSearch(e.target.value, { replace: true })}
            />
          </div>
          <Table aria-label="Segments">
            <THead>
              <tr>
                <TH>Name</TH>
                <TH>Type</TH>
                <TH numeric>Members</TH>
                <TH>Membership</TH>
                <TH>Updated</TH>
              </tr>
            </THead>
            <TBody>
              {segments.isLoading ? <SkeletonRows columns={5} rows={5} /> : null}
              {rows.map((s) => (
                <TR key={s.id} onClick={() => void navigate(projectPath(project, `segments/${s.id}`))}>
                  <TD>
                    <Link to={projectPath(project, `segments/${s.id}`)} className="font-medium hover:underline" onClick={(e) => e.stopPropagation()}>
                      {s.name}
                    </Link>
                    {s.description ? <p className="line-clamp-1 text-xs text-fg-muted">{s.description}</p> : null}
                  </TD>
                  <TD>
                    <Badge>{s.type === 'DYNAMIC' ? 'Dynamic' : 'Static'}</Badge>
                  </TD>
                  <TD numeric>{formatNumber(s.memberCount)}</TD>
                  <TD>{s.trackMembership ? <Status tone="ok">Tracked</Status> : <span className="text-fg-muted">Not tracked</span>}</TD>
                  <TD>
                    <time dateTime={s.updatedAt} title={formatDateTime(s.updatedAt)} className="text-fg-muted">
                      {formatRelative(s.updatedAt)}
                    </time>
                  </TD>
                </TR>
              ))}
              {segments.data && rows.length === 0 ? (
                <tr>
                  <td colSpan={5} className="px-3 py-8 text-center text-fg-muted">
                    No segment matches “{search}”.
                  </td>
                </tr>
              ) : null}
            </TBody>
          </Table>
        </div>
      )}
    </>
  );
}
