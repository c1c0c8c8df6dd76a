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

const label = (value: Access) => (value === 'write' ? 'can edit' : 'view only');

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
        <AccessChoice access={access} onChange={setAccess} />
        <button type="submit" disabled={busy}>
          Share
        </button>
      </form>
      <Feedback message={message} error={error} />

      <h3 id="grantees-title">People with access</h3>
      <GranteeList
        grantees={grantees}
        busy={busy}
        onRevoke={(grantee) =>
          void run(async () => {
            setMessage(null);
            await revokeAccess(workspace, entry, grantee);
            setMessage(`${grantee} no longer has access.`);
            await reload();
          })
        }
      />
      <div class="buttons end">
        <button type="button" class="secondary" onClick={onClose}>
          Close
        </button>
      </div>
    </dialog>
  );
}

/** What the last action did, or why it failed. */
function Feedback({ message, error }: { message: string | null; error: string | null }) {
  return (
    <>
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
    </>
  );
}

function AccessChoice({ access, onChange }: { access: Access; onChange: (access: Access) => void }) {
  return (
    <fieldset>
      <legend>Access</legend>
      <label class="choice">
        <input
          type="radio"
          name="access"
          value="write"
          checked={access === 'write'}
          onChange={() => onChange('write')}
        />
        Can edit
      </label>
      <label class="choice">
        <input type="radio" name="access" value="read" checked={access === 'read'} onChange={() => onChange('read')} />
        View only
      </label>
    </fieldset>
  );
}

/** Who the list is shared with (null while loading), each with a button that revokes it. */
function GranteeList({
  grantees,
  busy,
  onRevoke,
}: {
  grantees: Grantee[] | null;
  busy: boolean;
  onRevoke: (username: string) => void;
}) {
  if (grantees === null) return <p class="muted">Loading…</p>;
  if (grantees.length === 0) return <p class="muted">Only you.</p>;
  return (
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
            onClick={() => onRevoke(grantee.username)}
          >
            Revoke
          </button>
        </li>
      ))}
    </ul>
  );
}
