import { useQuery } from '@tanstack/react-query';
import { Command } from 'cmdk';
import { Search } from 'lucide-react';
import { useEffect, useState } from 'react';
import { useNavigate } from 'react-router';
import { api, unwrap } from '@/api/client';
import { projectPath } from './project';
import { NAV } from './routes';
import type { Project } from './session';

const hasPage = (path: string) => NAV.some((n) => n.path === path);

/** Debounced: the palette searches once typing pauses. */
function useDebounced(value: string, ms: number): string {
  const [debounced, setDebounced] = useState(value);
  useEffect(() => {
    const t = setTimeout(() => setDebounced(value), ms);
    return () => clearTimeout(t);
  }, [value, ms]);
  return debounced;
}

interface Hit {
  key: string;
  label: string;
  hint: string;
  to: string;
}

/** Contacts by email, and campaigns, workflows and templates by name (5 each), for pages that exist. */
function useHits(project: Project, search: string): { hits: Hit[]; loading: boolean } {
  const q = search.trim();
  const on = q.length >= 2;
  const contacts = useQuery({
    queryKey: ['palette', project.id, 'contacts', q],
    queryFn: () => unwrap(api.GET('/contacts', { params: { query: { search: q, limit: 5 } } })),
    enabled: on && hasPage('contacts'),
  });
  const campaigns = useQuery({
    queryKey: ['palette', project.id, 'campaigns', q],
    queryFn: () => unwrap(api.GET('/campaigns', { params: { query: { search: q, pageSize: 5 } } })),
    enabled: on && hasPage('campaigns'),
  });
  const workflows = useQuery({
    queryKey: ['palette', project.id, 'workflows', q],
    queryFn: () => unwrap(api.GET('/workflows', { params: { query: { search: q, pageSize: 5 } } })),
    enabled: on && hasPage('workflows'),
  });
  const templates = useQuery({
    queryKey: ['palette', project.id, 'templates', q],
    queryFn: () => unwrap(api.GET('/templates', { params: { query: { search: q, pageSize: 5 } } })),
    enabled: on && hasPage('templates'),
  });
  const hits: Hit[] = [
    ...(contacts.data?.data ?? []).map((c) => ({ key: `contact-${c.id}`, label: c.email, hint: 'Contact', to: projectPath(project, `contacts/${c.id}`) })),
    ...(campaigns.data?.data ?? []).map((c) => ({ key: `campaign-${c.id}`, label: c.name, hint: 'Campaign', to: projectPath(project, `campaigns/${c.id}`) })),
    ...(workflows.data?.data ?? []).map((w) => ({ key: `workflow-${w.id}`, label: w.name, hint: 'Workflow', to: projectPath(project, `workflows/${w.id}`) })),
    ...(templates.data?.data ?? []).map((t) => ({ key: `template-${t.id}`, label: t.name, hint: 'Template', to: projectPath(project, `templates/${t.id}`) })),
  ];
  const loading = on && [contacts, campaigns, workflows, templates].some((r) => r.fetchStatus === 'fetching');
  return { hits, loading };
}

/** Ctrl/⌘-K: jump to any page, or to a contact, campaign, workflow or template by name. */
export function CommandPalette({ project }: { project: Project }) {
  const [open, setOpen] = useState(false);
  const [search, setSearch] = useState('');
  const navigate = useNavigate();
  const debounced = useDebounced(search, 250);
  const { hits, loading } = useHits(project, open ? debounced : '');

  useEffect(() => {
    const onKey = (e: KeyboardEvent) => {
      if ((e.metaKey || e.ctrlKey) && e.key.toLowerCase() === 'k') {
        e.preventDefault();
        setOpen((o) => !o);
      }
    };
    document.addEventListener('keydown', onKey);
    return () => document.removeEventListener('keydown', onKey);
  }, []);

  const go = (to: string) => {
    setOpen(false);
    setSearch('');
    void navigate(to);
  };
  const item = 'flex cursor-default items-center justify-between gap-2 rounded px-2 py-1.5 data-[selected=true]:bg-muted';
  return (
    <>
      <button
        type="button"
        onClick={() => setOpen(true)}
        className="flex w-full items-center gap-2 rounded-md border border-border px-2 py-1.5 text-fg-muted hover:bg-muted"
      >
        <Search className="size-4 shrink-0" aria-hidden />
        <span className="flex-1 text-left max-md:sr-only">Search…</span>
        <kbd className="text-xs max-md:hidden">Ctrl K</kbd>
      </button>
      <Command.Dialog
        open={open}
        onOpenChange={setOpen}
        label="Search and jump"
        shouldFilter={false}
        overlayClassName="fixed inset-0 z-40 bg-black/40"
        contentClassName="fixed top-24 left-1/2 z-50 w-[min(36rem,calc(100vw-2rem))] -translate-x-1/2 overflow-hidden rounded-md border border-border bg-surface shadow-lg"
      >
        <Command.Input
          value={search}
          onValueChange={setSearch}
          placeholder="Jump to a page, contact, campaign, workflow or template…"
          className="h-11 w-full border-b border-border bg-transparent px-4 outline-none"
        />
        <Command.List className="max-h-80 overflow-y-auto p-2">
          {loading ? <Command.Loading>Searching…</Command.Loading> : null}
          <Command.Empty className="px-2 py-3 text-fg-muted">Nothing matches.</Command.Empty>
          <Command.Group heading="Pages" className="text-xs text-fg-muted [&_[cmdk-item]]:text-sm [&_[cmdk-item]]:text-fg">
            {NAV.filter((n) => n.label.toLowerCase().includes(search.trim().toLowerCase())).map((n) => (
              <Command.Item key={n.path} value={`page-${n.path}`} onSelect={() => go(projectPath(project, n.path))} className={item}>
                <span className="flex items-center gap-2">
                  <n.icon className="size-4" aria-hidden /> {n.label}
                </span>
              </Command.Item>
            ))}
          </Command.Group>
          {hits.length > 0 ? (
            <Command.Group heading="Results" className="text-xs text-fg-muted [&_[cmdk-item]]:text-sm [&_[cmdk-item]]:text-fg">
              {hits.map((h) => (
                <Command.Item key={h.key} value={h.key} onSelect={() => go(h.to)} className={item}>
                  <span className="truncate">{h.label}</span>
                  <span className="text-xs text-fg-muted">{h.hint}</span>
                </Command.Item>
              ))}
            </Command.Group>
          ) : null}
        </Command.List>
      </Command.Dialog>
    </>
  );
}
