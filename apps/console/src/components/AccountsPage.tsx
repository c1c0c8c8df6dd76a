/**
 * Accounts (§13.2): administrators (`account_write_principals`) see every account, create
 * accounts, set a new password, send a reset mail when the server validates e-mails, delete.
 * Anyone else sees and manages their own account only.
 */
import { useState } from 'preact/hooks';
import type { KintoObject } from '@quire/client/admin';
import { explain, statusOf } from '../lib/remote.js';
import { formatTimestamp, relativeTime } from '../lib/format.js';
import { useDebounced, usePagedList } from '../lib/hooks.js';
import { countLabel } from '../lib/paged-list.js';
import { useCapabilities, useConsole } from './context.js';
import { ConfirmDialog, Dialog, EmptyState, Field, FormError, onSubmit, PageHeader, Spinner } from './ui.js';
import { PagedTable, TableRow } from './PagedTable.js';

function generatePassword(): string {
  const alphabet = 'abcdefghijkmnopqrstuvwxyzABCDEFGHJKLMNPQRSTUVWXYZ23456789';
  const bytes = crypto.getRandomValues(new Uint8Array(16));
  return Array.from(bytes, (byte) => alphabet[byte % alphabet.length]).join('');
}

/** A new password: typed, or generated. */
function PasswordInput({ password, setPassword }: { password: string; setPassword: (password: string) => void }) {
  return (
    <div class="input-row">
      <input
        value={password}
        onInput={(event) => setPassword(event.currentTarget.value)}
        required
        spellcheck={false}
        autocomplete="new-password"
      />
      <button type="button" class="button secondary small" onClick={() => setPassword(generatePassword())}>
        Generate
      </button>
    </div>
  );
}

export function AccountsPage() {
  const { api, hello } = useConsole();
  const { readonly } = useCapabilities();
  const validation = hello.capabilities.accounts?.validation_enabled === true;
  const [search, setSearch] = useState('');
  const term = useDebounced(search.trim(), 250);
  const [version, setVersion] = useState(0);
  const params = new URLSearchParams({ _sort: 'id' });
  if (term) params.set('like_id', JSON.stringify(term));
  const paged = usePagedList<KintoObject>(api, '/accounts', String(params), { count: true }, version);
  const [state, list] = paged;
  const [creating, setCreating] = useState(false);
  const [resetting, setResetting] = useState<string | null>(null);
  const [deleting, setDeleting] = useState<string | null>(null);
  const me = hello.user?.id;
  const template = `minmax(220px, 2fr) ${validation ? '120px ' : ''}190px 260px`;

  return (
    <div class="page fill">
      <AccountsHeader onCreate={readonly ? null : () => setCreating(true)} />
      <div class="toolbar">
        <input
          type="search"
          class="search"
          placeholder="Find accounts…"
          aria-label="Find accounts"
          value={search}
          onInput={(event) => setSearch(event.currentTarget.value)}
        />
        <span class="muted small">{countLabel(state, 'account')}</span>
      </div>
      <PagedTable
        label="Accounts"
        paged={paged}
        template={template}
        rowHeight={48}
        errorTitle={(error) =>
          statusOf(error) === 401 || statusOf(error) === 403 ? 'You cannot list accounts' : undefined
        }
        columns={[
          'Account',
          ...(validation ? ['Validated'] : []),
          'Last change',
          <span key="actions" class="visually-hidden">
            Actions
          </span>,
        ]}
        empty={
          state.loading ? <Spinner /> : <EmptyState title={term ? `No account matches “${term}”` : 'No account yet'} />
        }
        renderRow={(account, index) => (
          <AccountRow
            account={account}
            index={index}
            template={template}
            validation={validation}
            me={me === `account:${account.id}`}
            onReset={readonly ? null : () => setResetting(account.id)}
            onDelete={readonly ? null : () => setDeleting(account.id)}
          />
        )}
      />
      {creating ? (
        <CreateAccountDialog onClose={() => setCreating(false)} onCreated={() => setVersion((value) => value + 1)} />
      ) : null}
      {resetting ? (
        <ResetPasswordDialog id={resetting} validation={validation} onClose={() => setResetting(null)} />
      ) : null}
      {deleting ? (
        <DeleteAccountDialog id={deleting} onClose={() => setDeleting(null)} onDeleted={() => list?.remove(deleting)} />
      ) : null}
    </div>
  );
}

/** Null `onCreate`: no account can be created here (a read-only server). */
function AccountsHeader({ onCreate }: { onCreate: (() => void) | null }) {
  return (
    <PageHeader
      title="Accounts"
      actions={
        onCreate ? (
          <button type="button" class="button" onClick={onCreate}>
            New account
          </button>
        ) : null
      }
    >
      People who sign in with a username and a password. Account administrators see and manage all of them; others see
      their own.
    </PageHeader>
  );
}

function AccountRow({
  account,
  index,
  template,
  validation,
  me,
  onReset,
  onDelete,
}: {
  account: KintoObject;
  index: number;
  template: string;
  validation: boolean;
  /** The signed-in account. */
  me: boolean;
  /** Null: no actions (a read-only server). */
  onReset: (() => void) | null;
  onDelete: (() => void) | null;
}) {
  return (
    <TableRow index={index} template={template}>
      <span role="cell" class="cell-id">
        {account.id}
        {me ? <span class="badge subtle">you</span> : null}
      </span>
      {validation ? (
        <span role="cell">
          {account.validated === false ? <span class="badge warn">pending</span> : <span class="badge ok">yes</span>}
        </span>
      ) : null}
      <span role="cell" class="muted" title={formatTimestamp(account.last_modified)}>
        {relativeTime(account.last_modified)}
      </span>
      <span role="cell" class="row-actions">
        {onReset && onDelete ? (
          <>
            <button type="button" class="button secondary small" onClick={onReset}>
              Reset password
            </button>
            <button type="button" class="button danger-outline small" onClick={onDelete}>
              Delete
            </button>
          </>
        ) : null}
      </span>
    </TableRow>
  );
}

function CreateAccountDialog({ onClose, onCreated }: { onClose: () => void; onCreated: () => void }) {
  const { api, notify } = useConsole();
  const [id, setId] = useState('');
  const [password, setPassword] = useState(() => generatePassword());
  const [error, setError] = useState<string | null>(null);
  const [busy, setBusy] = useState(false);

  async function create() {
    setBusy(true);
    setError(null);
    try {
      await api.createAccount(id, password);
      notify(`Account “${id}” created.`);
      onCreated();
      onClose();
    } catch (caught) {
      if (statusOf(caught) === 412) setError(`The account “${id}” already exists.`);
      else setError(explain(caught));
    } finally {
      setBusy(false);
    }
  }

  return (
    <Dialog
      title="New account"
      onClose={onClose}
      footer={
        <>
          <button type="button" class="button secondary" onClick={onClose}>
            Cancel
          </button>
          <button type="submit" form="account-form" class="button" disabled={busy || !id || !password}>
            {busy ? 'Creating…' : 'Create account'}
          </button>
        </>
      }
    >
      <form id="account-form" class="form" onSubmit={onSubmit(() => void create())}>
        <Field label="Username">
          <input
            value={id}
            onInput={(event) => setId(event.currentTarget.value.trim())}
            required
            spellcheck={false}
            autocomplete="off"
          />
        </Field>
        <Field label="Password" hint="Give it to the person through a safe channel; they can change it.">
          <PasswordInput password={password} setPassword={setPassword} />
        </Field>
        <FormError error={error} />
      </form>
    </Dialog>
  );
}

function ResetPasswordDialog({ id, validation, onClose }: { id: string; validation: boolean; onClose: () => void }) {
  const { api, notify, hello } = useConsole();
  const [password, setPassword] = useState(() => generatePassword());
  const [error, setError] = useState<string | null>(null);
  const [busy, setBusy] = useState(false);
  const mine = hello.user?.id === `account:${id}`;

  async function setNew() {
    setBusy(true);
    setError(null);
    try {
      await api.setAccountPassword(id, password);
      notify(`New password set for “${id}”.${mine ? ' Sign in again with it.' : ''}`);
      onClose();
    } catch (caught) {
      setError(explain(caught));
    } finally {
      setBusy(false);
    }
  }

  async function sendMail() {
    setBusy(true);
    setError(null);
    try {
      await api.resetAccountPassword(id);
      notify(`A temporary password was mailed to ${id}.`);
      onClose();
    } catch (caught) {
      setError(explain(caught));
    } finally {
      setBusy(false);
    }
  }

  return (
    <Dialog
      title={`Reset the password of “${id}”`}
      onClose={onClose}
      footer={
        <>
          <button type="button" class="button secondary" onClick={onClose}>
            Cancel
          </button>
          {validation ? (
            <button type="button" class="button secondary" disabled={busy} onClick={() => void sendMail()}>
              Mail a temporary password
            </button>
          ) : null}
          <button type="submit" form="reset-form" class="button" disabled={busy || !password}>
            Set this password
          </button>
        </>
      }
    >
      <form id="reset-form" class="form" onSubmit={onSubmit(() => void setNew())}>
        <Field
          label="New password"
          hint={
            mine
              ? 'This is your own account: you will sign in again with it.'
              : 'The old password stops working at once.'
          }
        >
          <PasswordInput password={password} setPassword={setPassword} />
        </Field>
        <FormError error={error} />
      </form>
    </Dialog>
  );
}

function DeleteAccountDialog({ id, onClose, onDeleted }: { id: string; onClose: () => void; onDeleted: () => void }) {
  const { api, notify } = useConsole();
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState<string | null>(null);
  return (
    <ConfirmDialog
      title={`Delete the account “${id}”?`}
      confirmLabel="Delete account"
      danger
      busy={busy}
      onClose={onClose}
      onConfirm={async () => {
        setBusy(true);
        try {
          await api.deleteAccount(id);
          notify(`Account “${id}” deleted.`);
          onDeleted();
          onClose();
        } catch (caught) {
          setError(explain(caught));
          setBusy(false);
        }
      }}
    >
      <p>They can no longer sign in. What they created stays, with their permissions.</p>
      <FormError error={error} />
    </ConfirmDialog>
  );
}
