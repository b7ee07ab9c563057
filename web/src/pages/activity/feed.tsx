import {
  Activity,
  AlertTriangle,
  CalendarClock,
  CheckCircle2,
  Eye,
  GitBranch,
  LogIn,
  LogOut,
  type LucideIcon,
  MailCheck,
  MailOpen,
  MailX,
  MousePointerClick,
  Send,
  UserCheck,
  UserMinus,
  XCircle,
  Zap,
} from 'lucide-react';
import type { ReactNode } from 'react';
import { Link } from 'react-router';
import type { components } from '@/api/schema';
import { projectPath, useProject } from '@/app/project';
import { formatDateTime, formatNumber, formatRelative } from '@/lib/format';
import { cn } from '@/lib/cn';

export type ActivityItem = components['schemas']['ActivityItem'];
export type ActivityType = ActivityItem['type'];

type Tone = 'neutral' | 'ok' | 'warn' | 'bad' | 'accent';

/** Each type's name in the dashboard, its icon and (status colours for status only) its tone. */
export const TYPE_INFO: Record<ActivityType, { label: string; icon: LucideIcon; tone: Tone }> = {
  'email.sent': { label: 'Email sent', icon: Send, tone: 'neutral' },
  'email.delivery': { label: 'Email delivered', icon: MailCheck, tone: 'ok' },
  'email.open': { label: 'Email opened', icon: Eye, tone: 'accent' },
  'email.click': { label: 'Link clicked', icon: MousePointerClick, tone: 'accent' },
  'email.bounce': { label: 'Email bounced', icon: MailX, tone: 'bad' },
  'email.complaint': { label: 'Spam complaint', icon: AlertTriangle, tone: 'bad' },
  'email.received': { label: 'Email received', icon: MailOpen, tone: 'accent' },
  'contact.subscribed': { label: 'Subscribed', icon: UserCheck, tone: 'ok' },
  'contact.unsubscribed': { label: 'Unsubscribed', icon: UserMinus, tone: 'warn' },
  'segment.entry': { label: 'Entered segment', icon: LogIn, tone: 'neutral' },
  'segment.exit': { label: 'Left segment', icon: LogOut, tone: 'neutral' },
  'event.tracked': { label: 'Event tracked', icon: Zap, tone: 'accent' },
  'campaign.scheduled': { label: 'Campaign scheduled', icon: CalendarClock, tone: 'warn' },
  'campaign.sent': { label: 'Campaign sent', icon: Send, tone: 'ok' },
  'workflow.started': { label: 'Workflow started', icon: GitBranch, tone: 'neutral' },
  'workflow.completed': { label: 'Workflow completed', icon: CheckCircle2, tone: 'ok' },
  'workflow.failed': { label: 'Workflow failed', icon: XCircle, tone: 'bad' },
};

const TONE: Record<Tone, string> = {
  neutral: 'bg-muted text-fg-muted',
  ok: 'bg-ok/10 text-ok',
  warn: 'bg-warn/10 text-warn',
  bad: 'bg-bad/10 text-bad',
  accent: 'bg-accent/10 text-accent',
};

/** A relative time ("3 minutes ago") with the exact time on hover. */
export function RelativeTime({ iso, className }: { iso: string; className?: string }) {
  return (
    <time dateTime={iso} title={formatDateTime(iso)} className={cn('whitespace-nowrap text-fg-muted', className)}>
      {formatRelative(iso)}
    </time>
  );
}

interface Ref {
  id: string;
  name: string;
}

const asRef = (value: unknown): Ref | undefined =>
  value && typeof value === 'object' && typeof (value as Ref).id === 'string' && typeof (value as Ref).name === 'string' ? (value as Ref) : undefined;
const asText = (value: unknown): string | undefined => (typeof value === 'string' && value !== '' ? value : typeof value === 'number' ? String(value) : undefined);

/** A short "key: value" summary of tracked event data (the first few keys). */
function dataSummary(data: unknown): string | undefined {
  if (!data || typeof data !== 'object') return undefined;
  const entries = Object.entries(data as Record<string, unknown>);
  if (entries.length === 0) return undefined;
  const shown = entries.slice(0, 3).map(([k, v]) => `${k}: ${typeof v === 'object' && v !== null ? JSON.stringify(v) : String(v)}`);
  return shown.join(', ') + (entries.length > 3 ? ` +${entries.length - 3} more` : '');
}

function Detail({ label, children }: { label: string; children: ReactNode }) {
  return (
    <span className="inline-flex min-w-0 items-baseline gap-1">
      <span className="text-fg-muted">{label}</span>
      <span className="min-w-0 truncate">{children}</span>
    </span>
  );
}

/** What happened, from the item's metadata (docs/activity.md "Types and where they come from"). */
function ItemDetails({ item }: { item: ActivityItem }) {
  const project = useProject();
  const m = item.metadata;
  const link = (path: string, ref: Ref) => (
    <Link to={projectPath(project, `${path}/${ref.id}`)} className="text-fg hover:underline">
      {ref.name}
    </Link>
  );
  const parts: ReactNode[] = [];
  const campaign = asRef(m.campaign);
  const workflow = asRef(m.workflow);
  const template = asRef(m.template);
  const segment = asRef(m.segment);
  const subject = asText(m.subject);
  if (item.type === 'event.tracked') {
    const name = asText(m.name);
    if (name) parts.push(<code key="name" className="rounded bg-muted px-1 text-xs">{name}</code>);
    const data = dataSummary(m.data);
    if (data) parts.push(<span key="data" className="truncate text-fg-muted">{data}</span>);
  }
  if (subject) parts.push(<Detail key="subject" label="Subject">“{subject}”</Detail>);
  if (campaign) parts.push(<Detail key="campaign" label="Campaign">{link('campaigns', campaign)}</Detail>);
  if (workflow) parts.push(<Detail key="workflow" label="Workflow">{link('workflows', workflow)}</Detail>);
  if (template) parts.push(<Detail key="template" label="Template">{link('templates', template)}</Detail>);
  if (segment) parts.push(<Detail key="segment" label="Segment">{link('segments', segment)}</Detail>);
  const url = asText(m.url);
  if (url) parts.push(<Detail key="url" label="Link">{url}</Detail>);
  const bounce = [asText(m.bounceType), asText(m.bounceSubType)].filter(Boolean).join(' / ');
  if (bounce) parts.push(<Detail key="bounce" label="Bounce">{bounce}</Detail>);
  const diagnostic = asText(m.diagnosticCode);
  if (diagnostic) parts.push(<Detail key="diag" label="Diagnostic">{diagnostic}</Detail>);
  const feedback = asText(m.complaintFeedbackType);
  if (feedback) parts.push(<Detail key="feedback" label="Feedback">{feedback}</Detail>);
  if (typeof m.totalRecipients === 'number') parts.push(<Detail key="recipients" label="Recipients">{formatNumber(m.totalRecipients)}</Detail>);
  if (item.type.startsWith('workflow.') || item.type === 'campaign.scheduled') {
    const status = asText(m.status);
    if (status) parts.push(<Detail key="status" label="Now">{status.toLowerCase()}</Detail>);
  }
  const exitReason = asText(m.exitReason);
  if (exitReason) parts.push(<Detail key="exit" label="Exit">{exitReason}</Detail>);
  const error = asText(m.error);
  if (error) parts.push(<Detail key="error" label="Error"><span className="text-bad">{error}</span></Detail>);
  if (parts.length === 0) return null;
  return <div className="flex min-w-0 flex-wrap gap-x-3 gap-y-0.5 text-xs">{parts}</div>;
}

/** One row of the feed: icon, what happened, the contact (a link), when. */
export function ActivityRow({ item }: { item: ActivityItem }) {
  const project = useProject();
  const info = TYPE_INFO[item.type] ?? { label: item.type, icon: Activity, tone: 'neutral' as const };
  const Icon = info.icon;
  return (
    <li className="flex items-start gap-3 px-4 py-3" data-activity-type={item.type}>
      <span className={cn('mt-0.5 grid size-7 shrink-0 place-items-center rounded-full', TONE[info.tone])} aria-hidden>
        <Icon className="size-3.5" />
      </span>
      <div className="grid min-w-0 flex-1 gap-1">
        <div className="flex min-w-0 flex-wrap items-baseline gap-x-2">
          <span className="font-medium">{info.label}</span>
          {item.contact ? (
            <Link to={projectPath(project, `contacts/${item.contact.id}`)} className="min-w-0 truncate text-accent hover:underline">
              {item.contact.email}
            </Link>
          ) : null}
        </div>
        <ItemDetails item={item} />
      </div>
      <RelativeTime iso={item.timestamp} className="text-xs" />
    </li>
  );
}

/** Placeholder rows while the feed loads. */
export function ActivitySkeleton({ rows = 6 }: { rows?: number }) {
  return (
    <ul aria-hidden className="divide-y divide-border">
      {Array.from({ length: rows }, (_, i) => (
        <li key={i} className="flex items-center gap-3 px-4 py-3">
          <span className="size-7 shrink-0 animate-pulse rounded-full bg-muted" />
          <span className="h-4 w-64 animate-pulse rounded-md bg-muted" />
          <span className="ml-auto h-3 w-16 animate-pulse rounded-md bg-muted" />
        </li>
      ))}
    </ul>
  );
}
