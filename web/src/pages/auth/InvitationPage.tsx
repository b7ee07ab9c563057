import { useMutation, useQuery, useQueryClient } from '@tanstack/react-query';
import { Link, useLocation, useNavigate, useSearchParams } from 'react-router';
import { ApiError, api, unwrap } from '@/api/client';
import { projectsKey, rememberProject, useMe } from '@/app/session';
import { ErrorState } from '@/components/page';
import { Button, buttonVariants } from '@/components/ui/button';
import { Skeleton } from '@/components/ui/skeleton';
import { formatDateTime } from '@/lib/format';
import { AuthCard } from './AuthCard';

/** The invitation link's landing page: who invites whom to what; accept once signed in as the invited address. */
export function InvitationPage() {
  const [search] = useSearchParams();
  const token = search.get('token') ?? '';
  const location = useLocation();
  const navigate = useNavigate();
  const queryClient = useQueryClient();
  const me = useMe();
  const preview = useQuery({
    queryKey: ['auth', 'invitation', token],
    queryFn: () => unwrap(api.GET('/auth/invitation', { params: { query: { token } } })),
    enabled: token !== '',
  });
  const accept = useMutation({
    mutationFn: () => unwrap(api.POST('/auth/accept-invitation', { body: { token } })),
    onSuccess: async (joined) => {
      await queryClient.invalidateQueries({ queryKey: projectsKey });
      rememberProject(joined.projectId);
      void navigate(`/projects/${joined.projectId}`);
    },
  });
  if (!token) return <AuthCard title="Invitation" description="Open the link of the invitation email: this page needs its token." />;
  if (preview.isPending) {
    return (
      <AuthCard title="Invitation">
        <Skeleton className="h-5 w-full" />
      </AuthCard>
    );
  }
  if (preview.error) {
    return (
      <AuthCard title="Invitation">
        <ErrorState error={preview.error} />
      </AuthCard>
    );
  }
  const inv = preview.data;
  const next = encodeURIComponent(`${location.pathname}${location.search}`);
  const signedIn = me.data !== undefined;
  const otherAccount = signedIn && me.data.email.toLowerCase() !== inv.email.toLowerCase();
  return (
    <AuthCard
      title={`Join ${inv.projectName}`}
      description={
        <>
          {inv.invitedBy ? `${String(inv.invitedBy)} invites` : 'You are invited:'} {inv.email} as {inv.role.toLowerCase()}. The invitation expires{' '}
          {formatDateTime(inv.expiresAt)}.
        </>
      }
    >
      {signedIn ? (
        <>
          {otherAccount ? <p className="text-warn">You are signed in as {me.data.email}; the invitation is for {inv.email}.</p> : null}
          <Button onClick={() => accept.mutate()} disabled={accept.isPending}>
            Accept the invitation
          </Button>
          {accept.error ? <ErrorState error={accept.error} /> : null}
        </>
      ) : (
        <div className="grid gap-2">
          <Link to={`/signup?next=${next}`} className={buttonVariants()}>
            Create an account for {inv.email}
          </Link>
          <Link to={`/login?next=${next}`} className={buttonVariants({ variant: 'secondary' })}>
            I have an account
          </Link>
        </div>
      )}
      {me.error && !(me.error instanceof ApiError && me.error.status === 401) ? <ErrorState error={me.error} /> : null}
    </AuthCard>
  );
}
