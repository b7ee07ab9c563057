import { Filter } from 'lucide-react';
import type { PageModule } from '@/app/modules';

/** Segments: the list, the builder (new and edit), a segment's members. */
export const page: PageModule = {
  project: [
    { path: 'segments', lazy: () => import('./SegmentsPage').then((m) => ({ Component: m.SegmentsPage })) },
    { path: 'segments/new', lazy: () => import('./NewSegmentPage').then((m) => ({ Component: m.NewSegmentPage })) },
    { path: 'segments/:segmentId', lazy: () => import('./SegmentPage').then((m) => ({ Component: m.SegmentPage })) },
  ],
  nav: [{ label: 'Segments', path: 'segments', icon: Filter, order: 20, group: 'main' }],
};
