/**
 * The end of an editor: why the last save failed, then its buttons (save, undo the changes, and
 * whatever the editor adds after them).
 */
import type { ComponentChildren } from 'preact';
import type { Saving } from '../lib/hooks.js';
import { useCapabilities } from './context.js';
import { ErrorNotice } from './ui.js';

export function EditActions({
  dirty,
  saving: { busy, error },
  invalid = false,
  sticky = false,
  saveLabel = 'Save',
  onSave,
  onUndo,
  errorTitle,
  children,
}: {
  /** Something changed since the last save. */
  dirty: boolean;
  saving: Pick<Saving, 'busy' | 'error'>;
  /** What was edited cannot be sent as it is. */
  invalid?: boolean;
  sticky?: boolean;
  saveLabel?: string;
  onSave: () => void;
  /** Without it, no undo button (nothing saved yet to go back to). */
  onUndo?: (() => void) | undefined;
  errorTitle?: string;
  children?: ComponentChildren;
}) {
  // On a read-only server, only the children show.
  const { readonly } = useCapabilities();
  return (
    <>
      {error ? <ErrorNotice error={error} {...(errorTitle ? { title: errorTitle } : {})} /> : null}
      {readonly && !children ? null : (
        <div class={sticky ? 'form-actions sticky' : 'form-actions'}>
          {!readonly ? (
            <>
              <button type="button" class="button" disabled={!dirty || busy || invalid} onClick={onSave}>
                {busy ? 'Saving…' : saveLabel}
              </button>
              {onUndo ? (
                <button type="button" class="button secondary" disabled={!dirty || busy} onClick={onUndo}>
                  Undo changes
                </button>
              ) : null}
            </>
          ) : null}
          {children}
        </div>
      )}
    </>
  );
}

/** The button that opens an object's deletion dialog, pushed to the end of the actions. */
export function DeleteButton({ label, disabled, onClick }: { label: string; disabled?: boolean; onClick: () => void }) {
  return (
    <>
      <span class="toolbar-spacer" />
      <button type="button" class="button danger-outline" disabled={disabled} onClick={onClick}>
        {label}
      </button>
    </>
  );
}
