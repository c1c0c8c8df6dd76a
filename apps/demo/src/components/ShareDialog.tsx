/** Share a list with another user (can edit / view only), see who has access, revoke it. */
import { useEffect, useRef, useState } from 'preact/hooks';
import { describeError } from '../errors.js';
import { useAction } from '../hooks.js';
import type { ListRecord } from '../model.js';
import { type Access, type Grantee, listGrantees, revokeAccess, shareList } from '../sharing.js';
import type { Workspace } from '../workspace.js';

interface Props {
  workspace: Workspace;
  entry: ListRecord;
  onClose: () => void;
}

export function ShareDialog({ workspace, entry, onClose }: Props) {
  const dialog = useRef<HTMLDialogElement>(null);
  const [grantees, setGrantees] = useState<Grantee[] | null>(null);
  const [username, setUsername] = useState('');
  const [access, setAccess] = useState<Access>('write');
  const [message, setMessage] = useState<string | null>(null);
  const { busy, error, run } = useAction(describeError);

  const reload = async () => setGrantees(await listGrantees(workspace, entry));

  useEffect(() => {
    dialog.current?.showModal();
    void run(reload);
  }, []);

  const label = (value: Access) => (value === 'write' ? 'can edit' : 'view only');

  return (
    <dialog
      ref={dialog}
      class="share-dialog"
      aria-labelledby="share-title"
      onCancel={(event) => {
        event.preventDefault();
        onClose();
      }}
    >
      <h2 id="share-title">Share “{entry.title}”</h2>
      <form
        onSubmit={(event) => {
          event.preventDefault();
          const name = username.trim();
          void run(async () => {
            setMessage(null);
            await shareList(workspace, entry, name, access);
            setUsername('');
            setMessage(
              `Shared with ${name} (${label(access)}). It appears in their “Shared with me” list at their next sync.`,
            );
            await reload();
          });
        }}
      >
        <label>
          Username
          <input
            name="share-username"
            autocomplete="off"
            value={username}
            onInput={(event) => setUsername(event.currentTarget.value)}
          />
        </label>
        <fieldset>
          <legend>Access</legend>
          <label class="choice">
            <input
              type="radio"
              name="access"
              value="write"
              checked={access === 'write'}
              onChange={() => setAccess('write')}
            />
            Can edit
          </label>
          <label class="choice">
            <input
              type="radio"
              name="access"
              value="read"
              checked={access === 'read'}
              onChange={() => setAccess('read')}
            />
            View only
          </label>
        </fieldset>
        <button type="submit" disabled={busy}>
          Share
        </button>
      </form>
      {message && (
        <p class="success" role="status">
          {message}
        </p>
      )}
      {error && (
        <p class="error" role="alert">
          {error}
        </p>
      )}

      <h3 id="grantees-title">People with access</h3>
      {grantees === null ? (
        <p class="muted">Loading…</p>
      ) : grantees.length === 0 ? (
        <p class="muted">Only you.</p>
      ) : (
        <ul class="grantees" aria-labelledby="grantees-title">
          {grantees.map((grantee) => (
            <li key={grantee.username}>
              <span>
                <strong>{grantee.username}</strong> · {label(grantee.access)}
              </span>
              <button
                type="button"
                class="danger"
                disabled={busy}
                aria-label={`Revoke access for ${grantee.username}`}
                onClick={() =>
                  void run(async () => {
                    setMessage(null);
                    await revokeAccess(workspace, entry, grantee.username);
                    setMessage(`${grantee.username} no longer has access.`);
                    await reload();
                  })
                }
              >
                Revoke
              </button>
            </li>
          ))}
        </ul>
      )}
      <div class="buttons end">
        <button type="button" class="secondary" onClick={onClose}>
          Close
        </button>
      </div>
    </dialog>
  );
}
