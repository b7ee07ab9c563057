import { Tabs } from 'radix-ui';
import { useProject } from '@/app/project';
import { PageHeader } from '@/components/page';
import { useSearchParams } from 'react-router';
import { BillingTab } from './BillingTab';
import { DangerTab } from './DangerTab';
import { KeysTab } from './KeysTab';
import { MembersTab } from './MembersTab';
import { ProjectTab, useConfig } from './ProjectTab';
import { SecurityTab } from './SecurityTab';
import { WebhooksTab } from './WebhooksTab';

const TABS = [
  { id: 'project', label: 'Project' },
  { id: 'keys', label: 'API keys' },
  { id: 'members', label: 'Members' },
  { id: 'webhooks', label: 'Webhooks' },
  { id: 'security', label: 'Security' },
  { id: 'billing', label: 'Billing' },
  { id: 'danger', label: 'Danger zone' },
] as const;

/** /settings?tab=…: the project's settings, one tab each. */
export function SettingsPage() {
  const project = useProject();
  const [params, setParams] = useSearchParams();
  const tab = params.get('tab');
  const config = useConfig();
  const billing = config.data?.billingEnabled === true && project.role !== 'MEMBER';
  const tabs = TABS.filter((t) => (t.id !== 'danger' || project.role === 'OWNER') && (t.id !== 'billing' || billing));
  // Until /config answers, a billing link (?tab=billing) waits rather than falling back to Project.
  const current = tab === 'billing' && config.isPending ? 'billing' : tabs.some((t) => t.id === tab) ? (tab as string) : 'project';
  return (
    <>
      <PageHeader title="Settings" description={`${project.name}: its name and tracking, API keys, members, webhooks and sending reputation.`} />
      <Tabs.Root
        value={current}
        onValueChange={(v) => {
          // A tab's own parameters (webhook selection, cursors) do not carry over to another tab.
          setParams(v === 'project' ? {} : { tab: v });
        }}
      >
        <Tabs.List aria-label="Settings sections" className="mb-6 flex gap-1 overflow-x-auto border-b border-border">
          {tabs.map((t) => (
            <Tabs.Trigger
              key={t.id}
              value={t.id}
              className="-mb-px border-b-2 border-transparent px-3 py-2 whitespace-nowrap text-fg-muted hover:text-fg data-[state=active]:border-accent data-[state=active]:font-medium data-[state=active]:text-fg"
            >
              {t.label}
            </Tabs.Trigger>
          ))}
        </Tabs.List>
        <Tabs.Content value="project">
          <ProjectTab />
        </Tabs.Content>
        <Tabs.Content value="keys">
          <KeysTab />
        </Tabs.Content>
        <Tabs.Content value="members">
          <MembersTab />
        </Tabs.Content>
        <Tabs.Content value="webhooks">
          <WebhooksTab />
        </Tabs.Content>
        <Tabs.Content value="security">
          <SecurityTab />
        </Tabs.Content>
        {billing ? (
          <Tabs.Content value="billing">
            <BillingTab />
          </Tabs.Content>
        ) : null}
        {project.role === 'OWNER' ? (
          <Tabs.Content value="danger">
            <DangerTab />
          </Tabs.Content>
        ) : null}
      </Tabs.Root>
    </>
  );
}
