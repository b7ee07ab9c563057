import { useMutation, useQueryClient } from '@tanstack/react-query';
import { useEffect, useRef } from 'react';
import { Link, useSearchParams } from 'react-router';
import { api, unwrap } from '@/api/client';
import { meKey } from '@/app/session';
import { ErrorState } from '@/components/page';
import { AuthCard } from './AuthCard';

/** The emailed link's landing page: verifies the address once, on arrival. */
export function VerifyEmailPage() {
  const [search] = useSearchParams();
  const token = search.get('token') ?? '';
  const queryClient = useQueryClient();
  const verify = useMutation({
    mutationFn: () => unwrap(api.POST('/auth/verify-email', { body: { token } })),
    onSuccess: () => void queryClient.invalidateQueries({ queryKey: meKey }),
  });
  const started = useRef(false);
  useEffect(() => {
    if (token && !started.current) {
      started.current = true;
      verify.mutate();
    }
  }, [token, verify]);
  if (!token) return <AuthCard title="Verify your email" description="Open the link of the email we sent you: this page needs its token." />;
  return (
    <AuthCard title="Verify your email">
      {verify.isPending || verify.isIdle ? <p aria-busy="true">Verifying…</p> : null}
      {verify.isSuccess ? (
        <p>
          Your address is verified. <Link to="/" className="text-accent underline">Continue to the dashboard</Link>
        </p>
      ) : null}
      {verify.error ? <ErrorState error={verify.error} /> : null}
    </AuthCard>
  );
}
