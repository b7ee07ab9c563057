import { Link } from 'react-router';

export function NotFound() {
  return (
    <main className="grid min-h-full place-items-center p-8 text-center">
      <div className="grid gap-2">
        <h1 className="text-xl font-semibold">Page not found</h1>
        <p className="text-fg-muted">This address is not a page of the dashboard.</p>
        <Link to="/" className="text-accent underline">
          Back to the start
        </Link>
      </div>
    </main>
  );
}
