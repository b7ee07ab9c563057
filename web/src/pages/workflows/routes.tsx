import { Workflow } from 'lucide-react';
import type { PageModule } from '@/app/modules';

export const page: PageModule = {
  project: [
    { path: 'workflows', lazy: () => import('./WorkflowsPage').then((m) => ({ Component: m.WorkflowsPage })) },
    { path: 'workflows/:workflowId', lazy: () => import('./WorkflowEditorPage').then((m) => ({ Component: m.WorkflowEditorPage })) },
    { path: 'workflows/:workflowId/executions', lazy: () => import('./ExecutionsPage').then((m) => ({ Component: m.ExecutionsPage })) },
  ],
  nav: [{ label: 'Workflows', path: 'workflows', icon: Workflow, order: 50, group: 'main' }],
};
