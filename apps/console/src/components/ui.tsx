/** The console's small building blocks: buttons, tabs, dialogs, notices, chips. */
import type { ComponentChildren } from 'preact';
import { useEffect, useRef } from 'preact/hooks';
import { describePrincipal } from '../lib/permissions.js';
import { useEscape } from '../lib/hooks.js';
import { explain, statusOf } from '../lib/remote.js';

export function Spinner({ label = 'Loading…' }: { label?: string }) {
  return (
    <span class="spinner" role="status">
      <span class="spinner-dot" aria-hidden="true" />
      {label}
    </span>
  );
}

export function ErrorNotice({
  error,
  onRetry,
  title,
}: {
  error: Error | string;
  onRetry?: () => void;
  title?: string;
}) {
  const text = typeof error === 'string' ? error : explain(error);
  const status = typeof error === 'string' ? undefined : statusOf(error);
  const hint =
    status === 401
      ? 'Sign in with an identity that may see this.'
      : status === 403
        ? 'Your identity is not allowed to do this.'
        : status === 404
          ? 'It may have been deleted.'
          : null;
  return (
    <div class="notice error" role="alert">
      <div>
        <strong>
          {title ?? (status === 403 ? 'Not allowed' : status === 404 ? 'Not found' : 'Something went wrong')}
        </strong>
        <p>
          {text}
          {hint ? ` ${hint}` : ''}
        </p>
      </div>
      {onRetry ? (
        <button type="button" class="button secondary small" onClick={onRetry}>
          Try again
        </button>
      ) : null}
    </div>
  );
}

/** A form's error line (nothing when there is none). */
export function FormError({ error }: { error: string | null | undefined }) {
  return error ? (
    <p class="form-error" role="alert">
      {error}
    </p>
  ) : null;
}

export function Notice({
  kind = 'info',
  children,
}: {
  kind?: 'info' | 'warning' | 'success';
  children: ComponentChildren;
}) {
  return (
    <div class={`notice ${kind}`} role="note">
      <div>{children}</div>
    </div>
  );
}

export function EmptyState({ title, children }: { title: string; children?: ComponentChildren }) {
  return (
    <div class="empty-state">
      <p class="empty-title">{title}</p>
      {children ? <div class="empty-body">{children}</div> : null}
    </div>
  );
}

interface TabItem {
  id: string;
  label: string;
  href: string;
  count?: number | null;
}

export function Tabs({ tabs, current, label }: { tabs: TabItem[]; current: string; label: string }) {
  return (
    <nav class="tabs" aria-label={label}>
      {tabs.map((tab) => (
        <a
          key={tab.id}
          href={tab.href}
          class={tab.id === current ? 'tab active' : 'tab'}
          aria-current={tab.id === current ? 'page' : undefined}
        >
          {tab.label}
          {typeof tab.count === 'number' ? <span class="tab-count">{tab.count}</span> : null}
        </a>
      ))}
    </nav>
  );
}

export function Dialog({
  title,
  onClose,
  children,
  footer,
  wide,
}: {
  title: string;
  onClose: () => void;
  children: ComponentChildren;
  footer?: ComponentChildren;
  wide?: boolean;
}) {
  const ref = useRef<HTMLDivElement>(null);
  useEscape(onClose);
  useEffect(() => {
    const previous = document.activeElement as HTMLElement | null;
    const first = ref.current?.querySelector<HTMLElement>('input, select, textarea, button:not(.dialog-close)');
    (first ?? ref.current)?.focus();
    return () => previous?.focus?.();
  }, []);
  return (
    // biome-ignore lint/a11y/noStaticElementInteractions: a click beside the dialog closes it; keys: Escape (useEscape)
    <div class="backdrop" onMouseDown={(event) => event.target === event.currentTarget && onClose()}>
      <div
        class={wide ? 'dialog wide' : 'dialog'}
        role="dialog"
        aria-modal="true"
        aria-label={title}
        ref={ref}
        tabIndex={-1}
      >
        <header class="dialog-header">
          <h2>{title}</h2>
          <button type="button" class="icon-button dialog-close" aria-label="Close" onClick={onClose}>
            ×
          </button>
        </header>
        <div class="dialog-body">{children}</div>
        {footer ? <footer class="dialog-footer">{footer}</footer> : null}
      </div>
    </div>
  );
}

export function ConfirmDialog({
  title,
  children,
  confirmLabel,
  danger,
  busy,
  onConfirm,
  onClose,
}: {
  title: string;
  children: ComponentChildren;
  confirmLabel: string;
  danger?: boolean;
  busy?: boolean;
  onConfirm: () => void;
  onClose: () => void;
}) {
  return (
    <Dialog
      title={title}
      onClose={onClose}
      footer={
        <>
          <button type="button" class="button secondary" onClick={onClose}>
            Cancel
          </button>
          <button type="button" class={danger ? 'button danger' : 'button'} disabled={busy} onClick={onConfirm}>
            {confirmLabel}
          </button>
        </>
      }
    >
      {children}
    </Dialog>
  );
}

export function Principal({ principal, me }: { principal: string; me?: string }) {
  const label = describePrincipal(principal);
  return (
    <span class={`principal principal-${label.kind}`} title={principal}>
      <span class="principal-title">{label.title}</span>
      <span class="principal-detail">
        {label.detail}
        {me && principal === me ? ' · you' : ''}
      </span>
    </span>
  );
}

export function Field({
  label,
  hint,
  children,
  error,
}: {
  label: string;
  hint?: ComponentChildren;
  children: ComponentChildren;
  error?: string | null;
}) {
  return (
    <div class={error ? 'field has-error' : 'field'}>
      {/* biome-ignore lint/a11y/noLabelWithoutControl: the label holds its control, given as `children` */}
      <label class="field-control">
        <span class="field-label">{label}</span>
        {children}
      </label>
      {error ? <span class="field-error">{error}</span> : hint ? <span class="field-hint">{hint}</span> : null}
    </div>
  );
}

export function Code({ children }: { children: ComponentChildren }) {
  return <code class="code">{children}</code>;
}

export function PageHeader({
  kicker,
  title,
  children,
  actions,
}: {
  kicker?: ComponentChildren;
  title: ComponentChildren;
  children?: ComponentChildren;
  actions?: ComponentChildren;
}) {
  return (
    <header class="page-header">
      <div class="page-heading">
        {kicker ? <div class="kicker">{kicker}</div> : null}
        <h1>{title}</h1>
        {children ? <div class="page-sub">{children}</div> : null}
      </div>
      {actions ? <div class="page-actions">{actions}</div> : null}
    </header>
  );
}

/** A form's submit handler without the page reload. */
export function onSubmit(handler: () => void): (event: Event) => void {
  return (event) => {
    event.preventDefault();
    handler();
  };
}
