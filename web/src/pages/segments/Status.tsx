/**
 * A status as a coloured dot and plain text: the status colour stays on the dot, the words keep
 * the text's contrast (the tinted `Badge tone="ok"` falls under WCAG AA contrast on light surfaces).
 */
export function Status({ tone, children }: { tone: 'ok' | 'neutral'; children: string }) {
  return (
    <span className="inline-flex items-center gap-1.5 whitespace-nowrap">
      <span aria-hidden className={tone === 'ok' ? 'size-2 rounded-full bg-ok' : 'size-2 rounded-full bg-fg-muted/50'} />
      {children}
    </span>
  );
}
