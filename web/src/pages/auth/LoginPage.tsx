import { useMutation, useQueryClient } from '@tanstack/react-query';
import { type FormEvent, useState } from 'react';
import { Link, useNavigate, useSearchParams } from 'react-router';
import { ApiError, api, unwrap } from '@/api/client';
import { meKey } from '@/app/session';
import { Button } from '@/components/ui/button';
import { Field } from '@/components/ui/field';
import { Input } from '@/components/ui/input';
import { AuthCard, nextPath, OAuthButtons } from './AuthCard';

const OAUTH_ERRORS: Record<string, string> = {
  access_denied: 'The sign-in was cancelled at the provider.',
};

export function LoginPage() {
  const [search] = useSearchParams();
  const navigate = useNavigate();
  const queryClient = useQueryClient();
  const [email, setEmail] = useState('');
  const [password, setPassword] = useState('');
  const login = useMutation({
    mutationFn: (body: { email: string; password: string }) => unwrap(api.POST('/auth/login', { body })),
    onSuccess: (user) => {
      queryClient.setQueryData(meKey, user);
      void navigate(nextPath(search), { replace: true });
    },
  });
  const error = login.error instanceof ApiError ? login.error : undefined;
  const oauthError = search.get('error');
  const submit = (e: FormEvent) => {
    e.preventDefault();
    login.mutate({ email, password });
  };
  return (
    <AuthCard
      title="Sign in"
      description="Welcome back."
      footer={
        <>
          New here? <Link to={`/signup${search.size ? `?${search.toString()}` : ''}`} className="text-accent underline">Create an account</Link>
        </>
      }
    >
      <OAuthButtons />
      {oauthError ? (
        <p role="alert" className="text-bad">
          {OAUTH_ERRORS[oauthError] ?? `The sign-in with the provider failed (${oauthError}).`}
        </p>
      ) : null}
      <form onSubmit={submit} className="grid gap-4">
        <Field label="Email" error={error?.fieldMessage('email')}>
          <Input type="email" autoComplete="email" value={email} onChange={(e) => setEmail(e.target.value)} required autoFocus />
        </Field>
        <Field label="Password" error={error?.fieldMessage('password')}>
          <Input type="password" autoComplete="current-password" value={password} onChange={(e) => setPassword(e.target.value)} required />
        </Field>
        {error && error.fields.length === 0 ? (
          <p role="alert" className="text-bad">
            {error.message}
          </p>
        ) : null}
        <Button type="submit" disabled={login.isPending}>
          Sign in
        </Button>
        <Link to="/reset-password" className="text-center text-fg-muted underline">
          Forgot your password?
        </Link>
      </form>
    </AuthCard>
  );
}
