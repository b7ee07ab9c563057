import { useMutation, useQueryClient } from '@tanstack/react-query';
import { Check, ChevronsUpDown, LogOut, Moon, Plus, Sun, UserCog } from 'lucide-react';
import { DropdownMenu as M } from 'radix-ui';
import { useState } from 'react';
import { NavLink, useNavigate } from 'react-router';
import { api } from '@/api/client';
import { Dialog } from '@/components/ui/dialog';
import { cn } from '@/lib/cn';
import { CommandPalette } from './CommandPalette';
import { NewProjectForm } from './NewProjectForm';
import { projectPath } from './project';
import { NAV } from './routes';
import { type Project, useMe } from './session';
import { currentTheme, setTheme } from './theme';

const menuContent = 'z-50 min-w-56 rounded-md border border-border bg-surface p-1 shadow-md';
const menuItem = 'flex cursor-default items-center gap-2 rounded px-2 py-1.5 outline-none data-[highlighted]:bg-muted';

function ProjectSwitcher({ project, projects }: { project: Project; projects: Project[] }) {
  const navigate = useNavigate();
  const [creating, setCreating] = useState(false);
  return (
    <>
      <M.Root>
        <M.Trigger className="flex w-full items-center justify-between gap-2 rounded-md px-2 py-2 text-left font-medium hover:bg-muted">
          {/* The accessible name holds the visible text (WCAG 2.5.3): "Switch project, current: Acme". */}
          <span className="truncate">
            <span className="sr-only">Switch project, current: </span>
            {project.name}
          </span>
          <ChevronsUpDown className="size-4 shrink-0 text-fg-muted" />
        </M.Trigger>
        <M.Portal>
          <M.Content align="start" className={menuContent}>
            <M.Label className="px-2 py-1 text-xs text-fg-muted">Projects</M.Label>
            {projects.map((p) => (
              <M.Item key={p.id} className={menuItem} onSelect={() => void navigate(projectPath(p))}>
                <Check className={cn('size-4', p.id === project.id ? 'opacity-100' : 'opacity-0')} />
                <span className="truncate">{p.name}</span>
              </M.Item>
            ))}
            <M.Separator className="my-1 h-px bg-border" />
            <M.Item className={menuItem} onSelect={() => setCreating(true)}>
              <Plus className="size-4" /> New project
            </M.Item>
          </M.Content>
        </M.Portal>
      </M.Root>
      <Dialog open={creating} onOpenChange={setCreating} title="New project" description="Its own contacts, templates, campaigns, workflows and API keys.">
        <NewProjectForm onDone={() => setCreating(false)} />
      </Dialog>
    </>
  );
}

function UserMenu() {
  const me = useMe();
  const queryClient = useQueryClient();
  const navigate = useNavigate();
  const [theme, setThemeState] = useState(currentTheme);
  const logout = useMutation({
    mutationFn: () => api.POST('/auth/logout'),
    onSettled: () => {
      queryClient.clear();
      void navigate('/login');
    },
  });
  const toggle = () => {
    const next = theme === 'dark' ? 'light' : 'dark';
    setTheme(next);
    setThemeState(next);
  };
  return (
    <M.Root>
      <M.Trigger className="flex w-full items-center gap-2 truncate rounded-md px-2 py-2 text-left hover:bg-muted">
        <span aria-hidden className="grid size-6 shrink-0 place-items-center rounded-full bg-accent/15 text-xs font-semibold text-accent">
          {me.data?.email.slice(0, 1).toUpperCase()}
        </span>
        <span className="sr-only">Account menu: </span>
        <span className="truncate max-md:hidden">{me.data?.email}</span>
      </M.Trigger>
      <M.Portal>
        <M.Content side="top" align="start" className={menuContent}>
          <M.Item className={menuItem} onSelect={toggle}>
            {theme === 'dark' ? <Sun className="size-4" /> : <Moon className="size-4" />} {theme === 'dark' ? 'Light theme' : 'Dark theme'}
          </M.Item>
          <M.Item className={menuItem} onSelect={() => void navigate('/settings')}>
            <UserCog className="size-4" /> Account settings
          </M.Item>
          <M.Item className={menuItem} onSelect={() => logout.mutate()}>
            <LogOut className="size-4" /> Sign out
          </M.Item>
        </M.Content>
      </M.Portal>
    </M.Root>
  );
}

/** The left sidebar: project switcher, the pages, the account menu; icons only on narrow screens. */
export function Sidebar({ project, projects }: { project: Project; projects: Project[] }) {
  const link = ({ isActive }: { isActive: boolean }) =>
    cn('flex items-center gap-2 rounded-md px-2 py-1.5 hover:bg-muted', isActive ? 'bg-muted font-medium text-fg' : 'text-fg-muted');
  const groups = [NAV.filter((n) => n.group === 'main'), NAV.filter((n) => n.group === 'setup')];
  return (
    <aside className="sticky top-0 flex h-screen w-56 shrink-0 flex-col gap-2 border-r border-border bg-surface p-2 max-md:w-14">
      <div className="max-md:hidden">
        <ProjectSwitcher project={project} projects={projects} />
      </div>
      <CommandPalette project={project} />
      <nav aria-label="Project" className="flex flex-1 flex-col gap-4 overflow-y-auto">
        {groups.map((items, i) =>
          items.length > 0 ? (
            <ul key={i} className="grid gap-0.5">
              {items.map((item) => (
                <li key={item.path}>
                  <NavLink to={projectPath(project, item.path)} end={item.path === ''} className={link} title={item.label}>
                    <item.icon className="size-4 shrink-0" aria-hidden />
                    <span className="max-md:sr-only">{item.label}</span>
                  </NavLink>
                </li>
              ))}
            </ul>
          ) : null,
        )}
      </nav>
      <UserMenu />
    </aside>
  );
}
