import { useMutation, useQuery, useQueryClient } from '@tanstack/react-query';
import { type FormEvent, useState } from 'react';
import { Link, useNavigate, useSearchParams } from 'react-router';
import { ApiError, api, unwrap } from '@/api/client';
import { meKey } from '@/app/session';
import { Button } from '@/components/ui/button';
import { Field } from '@/components/ui/field';
import { Input } from '@/components/ui/input';
import { AuthCard, nextPath, OAuthButtons } from './AuthCard';

export function SignupPage() {
  const [search] = useSearchParams();
  const navigate = useNavigate();
  const queryClient = useQueryClient();
  const [email, setEmail] = useState('');
  const [password, setPassword] = useState('');
  const config = useQuery({ queryKey: ['config'], queryFn: () => unwrap(api.GET('/config')), staleTime: Infinity });
  const signup = useMutation({
    mutationFn: (body: { email: string; password: string }) => unwrap(api.POST('/auth/signup', { body })),
    onSuccess: (user) => {
      queryClient.setQueryData(meKey, user);
      void navigate(nextPath(search), { replace: true });
    },
  });
  const error = signup.error instanceof ApiError ? signup.error : undefined;
  const submit = (e: FormEvent) => {
    e.preventDefault();
    signup.mutate({ email, password });
  };
  const footer = (
    <>
      Have an account? <Link to={`/login${search.size ? `?${search.toString()}` : ''}`} className="text-accent underline">Sign in</Link>
    </>
  );
  if (config.data && !config.data.signupEnabled) {
    return (
      <AuthCard title="Sign-up is closed" description="The operator of this instance creates accounts. Ask them for one." footer={footer}>
        <OAuthButtons />
      </AuthCard>
    );
  }
  return (
    <AuthCard title="Create your account" description="Send email and follow what your users do." footer={footer}>
      <OAuthButtons />
      <form onSubmit={submit} className="grid gap-4">
        <Field label="Email" error={error?.fieldMessage('email')}>
          <Input type="email" autoComplete="email" value={email} onChange={(e) => setEmail(e.target.value)} required autoFocus />
        </Field>
        <Field label="Password" error={error?.fieldMessage('password')} hint="At least 8 characters.">
          <Input type="password" autoComplete="new-password" value={password} onChange={(e) => setPassword(e.target.value)} required minLength={8} />
        </Field>
        {error && error.fields.length === 0 ? (
          <p role="alert" className="text-bad">
            {error.message}
          </p>
        ) : null}
        <Button type="submit" disabled={signup.isPending}>
          Create account
        </Button>
      </form>
    </AuthCard>
  );
}
