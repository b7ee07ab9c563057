import { keepPreviousData, useQuery } from '@tanstack/react-query';
import { Plus, Search } from 'lucide-react';
import { useEffect, useState } from 'react';
import { Link, useNavigate } from 'react-router';
import { api, unwrap } from '@/api/client';
import { projectPath, useProject } from '@/app/project';
import { EmptyState, ErrorState, PageHeader } from '@/components/page';
import { Badge } from '@/components/ui/badge';
import { buttonVariants } from '@/components/ui/button';
import { Input, Label } from '@/components/ui/input';
import { SkeletonRows, Table, TBody, TD, TH, THead, TR } from '@/components/ui/table';
import { cn } from '@/lib/cn';
import { formatDateTime, formatNumber, formatRate, formatRelative } from '@/lib/format';
import { useUrlParam } from '@/lib/url-state';
import { pageParam, Pager } from '../templates/Pager';
import { useSetUrlParams } from '@/lib/url-state';
import { CAMPAIGN_STATUSES, isCampaignStatus, rate, statusLabel, statusTone } from './logic';
import type { Campaign } from './shared';

/** The time that matters in a campaign's state: sent, scheduled, cancelled or last edited. */
function When({ c }: { c: Campaign }) {
  const [label, iso] =
    c.status === 'SENT' && c.sentAt
      ? ['Sent', c.sentAt]
      : c.status === 'SCHEDULED' && c.scheduledFor
        ? ['Scheduled', c.scheduledFor]
        : c.status === 'CANCELLED' && c.cancelledAt
          ? ['Cancelled', c.cancelledAt]
          : ['Edited', c.updatedAt];
  return (
    <span className="text-fg-muted">
      {label}{' '}
      <time dateTime={iso} title={formatDateTime(iso)}>
        {formatRelative(iso)}
      </time>
    </span>
  );
}

/** Campaigns: one email to an audience, by status (in the URL), newest first (GET /campaigns). */
export function CampaignsPage() {
  const project = useProject();
  const navigate = useNavigate();
  const [status] = useUrlParam('status');
  const [search] = useUrlParam('search');
  const [pageValue, setPage] = useUrlParam('page');
  const setParams = useSetUrlParams();
  const page = pageParam(pageValue);
  const [draft, setDraft] = useState(search ?? '');
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

  const query = { page, pageSize: 25, status: isCampaignStatus(status) ? status : undefined, search: search || undefined };
  const list = useQuery({
    queryKey: ['campaigns', 'list', query],
    queryFn: () => unwrap(api.GET('/campaigns', { params: { query } })),
    placeholderData: keepPreviousData,
    // Live counters while one of the page's campaigns is sending.
    refetchInterval: (q) => (q.state.data?.data.some((c) => c.status === 'SENDING') ? 1000 : false),
  });
  const newButton = (
    <Link to={projectPath(project, 'campaigns/new')} className={buttonVariants()}>
      <Plus /> New campaign
    </Link>
  );
  const filtered = Boolean(query.status || query.search);
  const tabs: [string | undefined, string][] = [[undefined, 'All'], ...CAMPAIGN_STATUSES.map((s): [string, string] => [s, statusLabel(s)])];

  return (
    <div>
      <PageHeader title="Campaigns" description="One email to all contacts or a segment, sent now or at a set time, with its results." actions={newButton} />
      <div className="mb-3 flex flex-wrap items-center justify-between gap-3">
        <div role="tablist" aria-label="Status" className="flex flex-wrap gap-1 rounded-md border border-border bg-surface p-1">
          {tabs.map(([value, label]) => {
            const active = (query.status ?? undefined) === value;
            return (
              <button
                key={label}
                type="button"
                role="tab"
                aria-selected={active}
                className={cn('rounded px-3 py-1 text-sm', active ? 'bg-muted font-medium text-fg' : 'text-fg-muted hover:text-fg')}
                onClick={() => setParams({ status: value, page: undefined })}
              >
                {label}
              </button>
            );
          })}
        </div>
        <div className="relative">
          <Label htmlFor="campaign-search" className="sr-only">
            Search campaigns
          </Label>
          <Search className="pointer-events-none absolute top-2.5 left-2.5 size-4 text-fg-muted" />
          <Input id="campaign-search" type="search" placeholder="Search name, subject, sender" className="w-72 pl-8" value={draft} onChange={(e) => setDraft(e.target.value)} />
        </div>
      </div>
      {list.isError ? (
        <ErrorState error={list.error} onRetry={() => void list.refetch()} />
      ) : list.data && list.data.total === 0 && !filtered ? (
        <EmptyState title="No campaigns yet" description="A campaign sends one email to all your contacts or a segment and shows who opened and clicked." action={newButton} />
      ) : (
        <>
          <Table aria-label="Campaigns">
            <THead>
              <tr>
                <TH>Name</TH>
                <TH>Status</TH>
                <TH numeric>Recipients</TH>
                <TH numeric>Sent</TH>
                <TH numeric>Opened</TH>
                <TH numeric>Clicked</TH>
                <TH>When</TH>
              </tr>
            </THead>
            <TBody>
              {list.isPending ? <SkeletonRows columns={7} /> : null}
              {list.data?.data.map((c) => {
                const href = projectPath(project, c.status === 'DRAFT' ? `campaigns/${c.id}/edit` : `campaigns/${c.id}`);
                const started = c.status === 'SENDING' || c.status === 'SENT' || (c.status === 'CANCELLED' && c.totalRecipients > 0);
                return (
                  <TR key={c.id} onClick={() => navigate(href)}>
                    <TD>
                      <Link to={href} onClick={(e) => e.stopPropagation()} className="font-medium hover:underline">
                        {c.name || 'Untitled campaign'}
                      </Link>
                      <div className="max-w-96 truncate text-xs text-fg-muted">{c.subject}</div>
                    </TD>
                    <TD>
                      <Badge tone={statusTone(c.status)}>{statusLabel(c.status)}</Badge>
                    </TD>
                    <TD numeric>{started ? formatNumber(c.totalRecipients) : '—'}</TD>
                    <TD numeric>{started ? formatNumber(c.sentCount) : '—'}</TD>
                    <TD numeric title={started ? `${formatNumber(c.openedCount)} opened` : undefined}>{started ? formatRate(rate(c.openedCount, c.sentCount)) : '—'}</TD>
                    <TD numeric title={started ? `${formatNumber(c.clickedCount)} clicked` : undefined}>{started ? formatRate(rate(c.clickedCount, c.sentCount)) : '—'}</TD>
                    <TD className="whitespace-nowrap">
                      <When c={c} />
                    </TD>
                  </TR>
                );
              })}
              {list.data && list.data.data.length === 0 ? (
                <tr>
                  <td colSpan={7} className="px-3 py-8 text-center text-fg-muted">
                    No campaign matches these filters.
                  </td>
                </tr>
              ) : null}
            </TBody>
          </Table>
          {list.data ? <Pager page={list.data.page} totalPages={list.data.totalPages} total={list.data.total} noun="campaign" onPage={(p) => setPage(p === 1 ? undefined : String(p))} /> : null}
        </>
      )}
    </div>
  );
}
