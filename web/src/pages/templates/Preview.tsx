import { useQuery } from '@tanstack/react-query';
import { Monitor, Smartphone, X } from 'lucide-react';
import { useEffect, useId, useMemo, useState } from 'react';
import { api, unwrap } from '@/api/client';
import type { components } from '@/api/schema';
import { Button } from '@/components/ui/button';
import { Input, Label } from '@/components/ui/input';
import { cn } from '@/lib/cn';
import { previewVariables, renderTemplate } from './variables';

type Contact = components['schemas']['Contact'];

function useDebounced<T>(value: T, ms: number): T {
  const [v, setV] = useState(value);
  useEffect(() => {
    const t = setTimeout(() => setV(value), ms);
    return () => clearTimeout(t);
  }, [value, ms]);
  return v;
}

/** Picks the contact a preview is rendered as: a search by email over GET /contacts. */
function ContactPicker({ contact, onPick }: { contact: Contact | undefined; onPick: (c: Contact | undefined) => void }) {
  const id = useId();
  const [search, setSearch] = useState('');
  const [open, setOpen] = useState(false);
  const term = useDebounced(search.trim(), 250);
  const results = useQuery({
    queryKey: ['contacts', 'picker', term],
    queryFn: () => unwrap(api.GET('/contacts', { params: { query: { search: term || undefined, limit: 6 } } })),
    enabled: open,
  });
  return (
    <div className="relative grid gap-1">
      <Label htmlFor={id} className="text-xs text-fg-muted">
        Preview as contact
      </Label>
      <div className="flex items-center gap-1">
        <Input
          id={id}
          role="combobox"
          aria-expanded={open}
          aria-controls={`${id}-list`}
          autoComplete="off"
          placeholder={contact ? contact.email : 'Search contacts by email'}
          value={search}
          onChange={(e) => {
            setSearch(e.target.value);
            setOpen(true);
          }}
          onFocus={() => setOpen(true)}
          onBlur={() => setTimeout(() => setOpen(false), 150)}
          onKeyDown={(e) => {
            if (e.key === 'Escape') setOpen(false);
            if (e.key === 'Enter') {
              e.preventDefault();
              const first = results.data?.data[0];
              if (first) {
                onPick(first);
                setSearch('');
                setOpen(false);
              }
            }
          }}
          className="h-8 w-64"
        />
        {contact ? (
          <Button size="icon" variant="ghost" className="size-8" aria-label="Preview without a contact" onClick={() => onPick(undefined)}>
            <X />
          </Button>
        ) : null}
      </div>
      {open ? (
        <ul id={`${id}-list`} role="listbox" aria-label="Contacts" className="absolute top-full z-20 mt-1 w-72 rounded-md border border-border bg-surface py-1 shadow-md">
          {results.isPending ? <li className="px-3 py-1.5 text-fg-muted">Searching…</li> : null}
          {results.isError ? <li className="px-3 py-1.5 text-bad">Could not search contacts</li> : null}
          {results.data && results.data.data.length === 0 ? <li className="px-3 py-1.5 text-fg-muted">No contact matches</li> : null}
          {results.data?.data.map((c) => (
            <li
              key={c.id}
              role="option"
              aria-selected={c.id === contact?.id}
              className="cursor-pointer truncate px-3 py-1.5 hover:bg-muted"
              onMouseDown={(e) => {
                e.preventDefault();
                onPick(c);
                setSearch('');
                setOpen(false);
              }}
            >
              {c.email}
            </li>
          ))}
        </ul>
      ) : null}
    </div>
  );
}

/**
 * The live preview of a subject and HTML body rendered as a chosen contact, client-side, in a
 * sandboxed iframe (sandbox="" : no scripts, no forms, no navigation of the dashboard).
 */
export function EmailPreview({ subject, body, onContact }: { subject: string; body: string; onContact?: ((contact: Contact | undefined) => void) | undefined }) {
  const [width, setWidth] = useState<'desktop' | 'mobile'>('desktop');
  const [picked, setPicked] = useState<Contact | undefined | null>(null);
  // Until the user picks (or clears), the newest contact of the project: a preview with real data.
  const first = useQuery({
    queryKey: ['contacts', 'preview-default'],
    queryFn: () => unwrap(api.GET('/contacts', { params: { query: { limit: 1 } } })),
    enabled: picked === null,
  });
  const contact = picked === null ? first.data?.data[0] : picked;
  // The editor's test send offers to render as the same contact.
  useEffect(() => onContact?.(contact), [contact, onContact]);
  const vars = useMemo(() => previewVariables(contact), [contact]);
  const html = useMemo(() => renderTemplate(body, vars, { escape: true }), [body, vars]);
  const renderedSubject = useMemo(() => renderTemplate(subject, vars, { escape: false }).replace(/[\r\n]+/g, ' '), [subject, vars]);

  return (
    <div className="flex h-full flex-col gap-3">
      <div className="flex flex-wrap items-end justify-between gap-2">
        <ContactPicker contact={contact} onPick={(c) => setPicked(c)} />
        <div role="group" aria-label="Preview width" className="flex rounded-md border border-border">
          <Button size="sm" variant="ghost" aria-pressed={width === 'desktop'} className={cn('rounded-r-none', width === 'desktop' && 'bg-muted')} onClick={() => setWidth('desktop')}>
            <Monitor /> Desktop
          </Button>
          <Button size="sm" variant="ghost" aria-pressed={width === 'mobile'} className={cn('rounded-l-none', width === 'mobile' && 'bg-muted')} onClick={() => setWidth('mobile')}>
            <Smartphone /> Mobile
          </Button>
        </div>
      </div>
      <div className="rounded-md border border-border bg-surface px-3 py-2 text-sm">
        <span className="text-fg-muted">Subject: </span>
        <span data-testid="preview-subject">{renderedSubject || <em className="text-fg-muted">no subject</em>}</span>
        <span className="ml-2 text-xs text-fg-muted">{contact ? `as ${contact.email}` : 'without contact data'}</span>
      </div>
      <div className="flex min-h-[420px] flex-1 justify-center overflow-auto rounded-md border border-border bg-muted p-2">
        <iframe
          title="Email preview"
          sandbox=""
          srcDoc={html}
          className="h-full min-h-[400px] rounded-sm border border-border bg-white transition-[width]"
          style={{ width: width === 'desktop' ? '100%' : 375 }}
        />
      </div>
    </div>
  );
}
