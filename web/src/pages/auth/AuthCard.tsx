import { useQuery } from '@tanstack/react-query';
import type { ReactNode } from 'react';
import { api, unwrap } from '@/api/client';
import { Card, CardBody } from '@/components/ui/card';
import { buttonVariants } from '@/components/ui/button';

/** The frame of the signed-out pages: a centred card with a title and a line under it. */
export function AuthCard({ title, description, children, footer }: { title: string; description?: ReactNode; children?: ReactNode; footer?: ReactNode }) {
  return (
    <main className="grid min-h-full place-items-center p-6">
      <div className="grid w-full max-w-sm gap-4">
        <Card>
          <CardBody className="grid gap-5 p-6">
            <div>
              <h1 className="text-lg font-semibold">{title}</h1>
              {description ? <p className="mt-1 text-fg-muted">{description}</p> : null}
            </div>
            {children}
          </CardBody>
        </Card>
        {footer ? <p className="text-center text-fg-muted">{footer}</p> : null}
      </div>
    </main>
  );
}

/** A button per configured OAuth provider (none when the operator configured none). */
export function OAuthButtons() {
  const config = useQuery({ queryKey: ['auth', 'oauth-config'], queryFn: () => unwrap(api.GET('/auth/oauth-config')), staleTime: Infinity });
  const providers = config.data?.providers ?? [];
  if (providers.length === 0) return null;
  return (
    <div className="grid gap-2">
      {providers.map((p) => (
        <a key={p.id} href={p.url} className={buttonVariants({ variant: 'secondary' })}>
          Continue with {p.name}
        </a>
      ))}
      <div className="flex items-center gap-2 text-xs text-fg-muted">
        <span className="h-px flex-1 bg-border" /> or <span className="h-px flex-1 bg-border" />
      </div>
    </div>
  );
}

/** `?next=` when it is a path of the app (never another site). */
export function nextPath(search: URLSearchParams): string {
  const next = search.get('next');
  return next && next.startsWith('/') && !next.startsWith('//') ? next : '/';
}
