import { useMutation, useQuery, useQueryClient } from '@tanstack/react-query';
import { ArrowLeft } from 'lucide-react';
import { useState } from 'react';
import { Link, useSearchParams } from 'react-router';
import { api, unwrap } from '@/api/client';
import type { components } from '@/api/schema';
import { useMe } from '@/app/session';
import { ErrorState, PageHeader } from '@/components/page';
import { useToast } from '@/components/toast';
import { Button, buttonVariants } from '@/components/ui/button';
import { Card, CardBody, CardHeader, CardTitle } from '@/components/ui/card';
import { ConfirmDialog } from '@/components/ui/dialog';
import { Skeleton } from '@/components/ui/skeleton';
import { TimeAgo } from './parts';

type Identity = components['schemas']['LinkedIdentity'];

/** The reasons a link can fail (docs/accounts.md), in words. */
const ERRORS: Record<string, string> = {
  oauth_identity_taken: 'That provider account already signs in to another user.',
  oauth_already_linked: 'You already linked another account of that provider: unlink it first.',
  oauth_session_ended: 'Your session ended before the provider answered. Sign in and try again.',
  oauth_account_exists: 'That provider account’s email belongs to another account.',
  oauth_email_unverified: 'The provider has not verified that account’s email address.',
};

const providerName = (id: string) => (id === 'github' ? 'GitHub' : id === 'google' ? 'Google' : id);

/** /app/settings: the account's linked sign-in providers (where OAuth linking returns). */
export function AccountSettingsPage() {
  const me = useMe();
  const [search, setSearch] = useSearchParams();
  const queryClient = useQueryClient();
  const notify = useToast();
  const [unlinking, setUnlinking] = useState<Identity | undefined>();
  const linked = search.get('linked');
  const error = search.get('error');
  const identities = useQuery({ queryKey: ['users', '@me', 'oauth-identities'], queryFn: () => unwrap(api.GET('/users/@me/oauth-identities')) });
  const providers = useQuery({ queryKey: ['auth', 'oauth-config'], queryFn: () => unwrap(api.GET('/auth/oauth-config')), staleTime: 5 * 60_000 });
  const unlink = useMutation({
    mutationFn: (provider: string) => unwrap(api.DELETE('/users/@me/oauth-identities/{provider}', { params: { path: { provider } } })),
    onSuccess: (_, provider) => {
      setUnlinking(undefined);
      void queryClient.invalidateQueries({ queryKey: ['users', '@me', 'oauth-identities'] });
      notify({ title: `${providerName(provider)} unlinked` });
    },
    onError: (err) => notify({ title: 'Could not unlink', description: err.message, tone: 'bad' }),
  });
  const linkedIds = new Set(identities.data?.map((i) => i.provider));
  const unlinkedProviders = providers.data?.providers.filter((p) => !linkedIds.has(p.id)) ?? [];
  return (
    <main className="mx-auto max-w-3xl px-6 py-8">
      <Link to="/" className="mb-4 inline-flex items-center gap-1 text-fg-muted hover:text-fg">
        <ArrowLeft className="size-4" /> Back to the dashboard
      </Link>
      <PageHeader title="Account" description={me.data ? `Signed in as ${me.data.email}.` : 'Your account.'} />
      {linked ? (
        <div role="status" className="mb-4 flex items-center justify-between gap-4 rounded-md border border-ok/40 bg-ok/5 px-4 py-3 text-ok">
          <span>{providerName(linked)} is linked: you can sign in with it from now on.</span>
          <Button size="sm" variant="ghost" onClick={() => setSearch({}, { replace: true })}>
            Dismiss
          </Button>
        </div>
      ) : null}
      {error ? (
        <div role="alert" className="mb-4 flex items-center justify-between gap-4 rounded-md border border-bad/40 bg-bad/5 px-4 py-3 text-bad">
          <span>Linking failed: {ERRORS[error] ?? error.replaceAll('_', ' ')}</span>
          <Button size="sm" variant="ghost" onClick={() => setSearch({}, { replace: true })}>
            Dismiss
          </Button>
        </div>
      ) : null}
      <Card>
        <CardHeader>
          <div>
            <CardTitle>Sign-in providers</CardTitle>
            <p className="mt-1 text-fg-muted">Accounts of other services that sign in to this account.</p>
          </div>
        </CardHeader>
        <CardBody className="grid gap-4">
          {identities.isPending ? (
            <Skeleton className="h-10 w-full" />
          ) : identities.error ? (
            <ErrorState error={identities.error} onRetry={() => void identities.refetch()} />
          ) : identities.data.length === 0 ? (
            <p className="text-fg-muted">No provider is linked: you sign in with your email and password.</p>
          ) : (
            <ul className="grid gap-2">
              {identities.data.map((i) => (
                <li key={i.provider} className="flex items-center justify-between gap-4 rounded-md border border-border px-3 py-2">
                  <div>
                    <div className="font-medium">{providerName(i.provider)}</div>
                    <div className="text-xs text-fg-muted">
                      {i.email} · linked <TimeAgo iso={i.linkedAt} /> · last sign-in <TimeAgo iso={i.lastSignInAt} />
                    </div>
                  </div>
                  <Button size="sm" variant="secondary" onClick={() => setUnlinking(i)}>
                    Unlink
                  </Button>
                </li>
              ))}
            </ul>
          )}
          {unlinkedProviders.length > 0 ? (
            <div className="flex flex-wrap gap-2">
              {unlinkedProviders.map((p) => (
                // A browser navigation: the server redirects to the provider and back to this page.
                <a key={p.id} href={`/auth/oauth/${encodeURIComponent(p.id)}/link`} className={buttonVariants({ variant: 'secondary' })}>
                  Link {p.name}
                </a>
              ))}
            </div>
          ) : null}
        </CardBody>
      </Card>
      <ConfirmDialog
        open={unlinking !== undefined}
        onOpenChange={(o) => !o && setUnlinking(undefined)}
        title={`Unlink ${unlinking ? providerName(unlinking.provider) : ''}?`}
        description={`You can no longer sign in with ${unlinking ? `${providerName(unlinking.provider)} (${unlinking.email})` : 'it'}. The last way to sign in cannot be removed.`}
        confirmLabel="Unlink"
        pending={unlink.isPending}
        onConfirm={() => unlinking && unlink.mutate(unlinking.provider)}
      />
    </main>
  );
}
