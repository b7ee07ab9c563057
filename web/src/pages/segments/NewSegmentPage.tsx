import { useMutation, useQueryClient } from '@tanstack/react-query';
import { useEffect, useState } from 'react';
import { Link, useNavigate } from 'react-router';
import { api, unwrap } from '@/api/client';
import { projectPath, useProject } from '@/app/project';
import { PageHeader } from '@/components/page';
import { useToast } from '@/components/toast';
import { countOf, emptyCard } from './conditions';
import { segmentKey, segmentsKey } from './fieldOptions';
import { SegmentForm, type SegmentValues } from './SegmentForm';

/** /segments/new: a DYNAMIC segment from the builder; saved, it opens on its members. */
export function NewSegmentPage() {
  const project = useProject();
  const navigate = useNavigate();
  const queryClient = useQueryClient();
  const toast = useToast();
  const [initial] = useState(() => ({ type: 'DYNAMIC' as const, name: '', description: '', trackMembership: false, card: emptyCard('AND') }));
  const create = useMutation({
    mutationFn: (values: SegmentValues) =>
      unwrap(
        api.POST('/segments', {
          body: {
            name: values.name,
            description: values.description,
            type: values.type,
            trackMembership: values.trackMembership,
            ...(values.type === 'DYNAMIC' ? { condition: values.condition } : {}),
          },
        }),
      ),
    onSuccess: (segment) => {
      queryClient.setQueryData(segmentKey(project.id, segment.id), segment);
      void queryClient.invalidateQueries({ queryKey: segmentsKey(project.id) });
      toast({
        title: `Segment “${segment.name}” created`,
        description: segment.type === 'DYNAMIC' ? countOf(segment.memberCount, 'matching contact', 'matching contacts') : 'Add its contacts by email from its members list',
      });
    },
  });
  // After the render that marks the form saved, so leaving it does not ask for confirmation.
  const created = create.data?.id;
  useEffect(() => {
    if (created) void navigate(projectPath(project, `segments/${created}`));
  }, [created, navigate, project]);
  return (
    <>
      <PageHeader
        title="New segment"
        description="Describe who belongs with conditions (kept up to date as contacts change), or keep a fixed list."
        actions={
          <Link to={projectPath(project, 'segments')} className="text-sm text-fg-muted underline">
            Cancel
          </Link>
        }
      />
      <SegmentForm
        initial={initial}
        chooseType
        submitLabel="Create segment"
        pending={create.isPending}
        saved={create.isSuccess}
        error={create.error}
        onSubmit={(values) => create.mutate(values)}
      />
    </>
  );
}
