import { useMutation } from '@tanstack/react-query';
import { type FormEvent, useState } from 'react';
import { Link, useSearchParams } from 'react-router';
import { ApiError, api, unwrap } from '@/api/client';
import { Button } from '@/components/ui/button';
import { Field } from '@/components/ui/field';
import { Input } from '@/components/ui/input';
import { AuthCard } from './AuthCard';

function RequestReset() {
  const [email, setEmail] = useState('');
  const request = useMutation({ mutationFn: (body: { email: string }) => unwrap(api.POST('/auth/request-password-reset', { body })) });
  const error = request.error instanceof ApiError ? request.error : undefined;
  const submit = (e: FormEvent) => {
    e.preventDefault();
    request.mutate({ email });
  };
  if (request.isSuccess) {
    return <AuthCard title="Check your inbox" description={`If ${email} has an account, a link to choose a new password is on its way. It works for one hour.`} />;
  }
  return (
    <AuthCard title="Reset your password" description="We email you a link to choose a new one." footer={<Link to="/login" className="underline">Back to sign in</Link>}>
      <form onSubmit={submit} className="grid gap-4">
        <Field label="Email" error={error?.fieldMessage('email') ?? (error && error.fields.length === 0 ? error.message : undefined)}>
          <Input type="email" autoComplete="email" value={email} onChange={(e) => setEmail(e.target.value)} required autoFocus />
        </Field>
        <Button type="submit" disabled={request.isPending}>
          Send the link
        </Button>
      </form>
    </AuthCard>
  );
}

function ChooseNew({ token }: { token: string }) {
  const [password, setPassword] = useState('');
  const reset = useMutation({ mutationFn: (body: { token: string; password: string }) => unwrap(api.POST('/auth/reset-password', { body })) });
  const error = reset.error instanceof ApiError ? reset.error : undefined;
  const submit = (e: FormEvent) => {
    e.preventDefault();
    reset.mutate({ token, password });
  };
  if (reset.isSuccess) {
    return (
      <AuthCard title="Password changed" description="Sign in with your new password.">
        <Link to="/login" className="text-accent underline">
          Sign in
        </Link>
      </AuthCard>
    );
  }
  return (
    <AuthCard title="Choose a new password">
      <form onSubmit={submit} className="grid gap-4">
        <Field label="New password" error={error?.fieldMessage('password') ?? (error && error.fields.length === 0 ? error.message : undefined)} hint="At least 8 characters.">
          <Input type="password" autoComplete="new-password" value={password} onChange={(e) => setPassword(e.target.value)} required minLength={8} autoFocus />
        </Field>
        <Button type="submit" disabled={reset.isPending}>
          Change password
        </Button>
      </form>
    </AuthCard>
  );
}

/** Without `?token=`: ask for the link; with it (the emailed link): choose the new password. */
export function ResetPasswordPage() {
  const [search] = useSearchParams();
  const token = search.get('token');
  return token ? <ChooseNew token={token} /> : <RequestReset />;
}
