import { Dialog as D } from 'radix-ui';
import type { ReactNode } from 'react';
import { Button } from './button';

interface DialogProps {
  open: boolean;
  onOpenChange: (open: boolean) => void;
  title: string;
  description?: ReactNode;
  children?: ReactNode;
  footer?: ReactNode;
}

/** A modal dialog (Radix: focus trapped, Escape closes, labelled by its title). */
export function Dialog({ open, onOpenChange, title, description, children, footer }: DialogProps) {
  return (
    <D.Root open={open} onOpenChange={onOpenChange}>
      <D.Portal>
        <D.Overlay className="fixed inset-0 z-40 bg-black/40" />
        <D.Content className="fixed top-1/2 left-1/2 z-50 grid w-[min(32rem,calc(100vw-2rem))] -translate-x-1/2 -translate-y-1/2 gap-4 rounded-md border border-border bg-surface p-5 shadow-lg">
          <D.Title className="text-base font-semibold">{title}</D.Title>
          {description ? <D.Description className="text-fg-muted">{description}</D.Description> : <D.Description className="sr-only">{title}</D.Description>}
          {children}
          {footer ? <div className="flex justify-end gap-2">{footer}</div> : null}
        </D.Content>
      </D.Portal>
    </D.Root>
  );
}

interface ConfirmProps {
  open: boolean;
  onOpenChange: (open: boolean) => void;
  title: string;
  /** Names what will be lost. */
  description: ReactNode;
  confirmLabel: string;
  onConfirm: () => void;
  pending?: boolean;
  danger?: boolean;
  /** Extra content (a name to type before a project's deletion). */
  children?: ReactNode;
  confirmDisabled?: boolean;
}

/** The confirmation every destructive action opens. */
export function ConfirmDialog({ open, onOpenChange, title, description, confirmLabel, onConfirm, pending, danger = true, children, confirmDisabled }: ConfirmProps) {
  return (
    <Dialog
      open={open}
      onOpenChange={onOpenChange}
      title={title}
      description={description}
      footer={
        <>
          <Button variant="secondary" onClick={() => onOpenChange(false)}>
            Cancel
          </Button>
          <Button variant={danger ? 'danger' : 'primary'} disabled={pending || confirmDisabled} onClick={onConfirm}>
            {confirmLabel}
          </Button>
        </>
      }
    >
      {children}
    </Dialog>
  );
}
