import { Toast as T } from 'radix-ui';
import { createContext, type ReactNode, useCallback, useContext, useMemo, useState } from 'react';
import { cn } from '@/lib/cn';

interface ToastItem {
  id: number;
  title: string;
  description?: ReactNode;
  tone: 'ok' | 'bad';
}

type Notify = (t: Omit<ToastItem, 'id' | 'tone'> & { tone?: ToastItem['tone'] }) => void;
const ToastContext = createContext<Notify>(() => undefined);

/** Toasts (Radix: announced politely, swipe or Escape to dismiss). */
export function ToastProvider({ children }: { children: ReactNode }) {
  const [items, setItems] = useState<ToastItem[]>([]);
  const notify = useCallback<Notify>((t) => setItems((list) => [...list, { id: Date.now() + Math.random(), tone: 'ok', ...t }]), []);
  const value = useMemo(() => notify, [notify]);
  return (
    <ToastContext.Provider value={value}>
      <T.Provider duration={5000}>
        {children}
        {items.map((t) => (
          <T.Root
            key={t.id}
            onOpenChange={(open) => !open && setItems((list) => list.filter((x) => x.id !== t.id))}
            className={cn('grid gap-1 rounded-md border bg-surface px-4 py-3 shadow-md', t.tone === 'bad' ? 'border-bad/50' : 'border-border')}
          >
            <T.Title className="font-medium">{t.title}</T.Title>
            {t.description ? <T.Description className="text-fg-muted">{t.description}</T.Description> : null}
          </T.Root>
        ))}
        <T.Viewport className="fixed right-4 bottom-4 z-50 flex w-80 flex-col gap-2" />
      </T.Provider>
    </ToastContext.Provider>
  );
}

export const useToast = (): Notify => useContext(ToastContext);
