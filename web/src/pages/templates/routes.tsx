import { FileText } from 'lucide-react';
import type { PageModule } from '@/app/modules';

/** Templates (issue 13 point 4): the list and the editor with its live preview. */
export const page: PageModule = {
  project: [
    { path: 'templates', lazy: () => import('./TemplatesPage').then((m) => ({ Component: m.TemplatesPage })) },
    { path: 'templates/new', lazy: () => import('./TemplateEditorPage').then((m) => ({ Component: m.TemplateEditorPage })) },
    { path: 'templates/:templateId', lazy: () => import('./TemplateEditorPage').then((m) => ({ Component: m.TemplateEditorPage })) },
  ],
  nav: [{ label: 'Templates', path: 'templates', icon: FileText, order: 30, group: 'main' }],
};
