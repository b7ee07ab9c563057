import { Check, Copy } from 'lucide-react';
import { useEffect, useState } from 'react';
import { Button } from '@/components/ui/button';
import { useToast } from '@/components/toast';
import { formatDateTime, formatRelative } from '@/lib/format';

/** Copies `value` to the clipboard; `label` names what is copied (for screen readers). */
export function CopyButton({ value, label }: { value: string; label: string }) {
  const [copied, setCopied] = useState(false);
  const notify = useToast();
  useEffect(() => {
    if (!copied) return;
    const t = setTimeout(() => setCopied(false), 1500);
    return () => clearTimeout(t);
  }, [copied]);
  const copy = async () => {
    try {
      await navigator.clipboard.writeText(value);
      setCopied(true);
    } catch {
      notify({ title: 'Could not copy', description: 'The browser refused access to the clipboard: select the text and copy it.', tone: 'bad' });
    }
  };
  return (
    <Button size="icon" variant="ghost" className="size-8" aria-label={`Copy ${label}`} title={`Copy ${label}`} onClick={() => void copy()}>
      {copied ? <Check className="text-ok" /> : <Copy />}
    </Button>
  );
}

/** A relative time with the exact time on hover. */
export function TimeAgo({ iso, empty = '—' }: { iso: string | null | undefined; empty?: string }) {
  if (!iso) return <span className="text-fg-muted">{empty}</span>;
  return (
    <time dateTime={iso} title={formatDateTime(iso)}>
      {formatRelative(iso)}
    </time>
  );
}

/** A secret value in monospace, masked until revealed. */
export function SecretText({ value, revealed }: { value: string; revealed: boolean }) {
  return <code className="min-w-0 flex-1 truncate rounded-md bg-muted px-2 py-1.5 font-mono text-xs">{revealed ? value : `${value.slice(0, 6)}${'•'.repeat(24)}`}</code>;
}
