/**
 * After a reload an account's password is not known (session.ts keeps it in memory only): the
 * lists open and work offline at once, and this bar asks for the password before they sync.
 */
import { useEffect, useState } from 'preact/hooks';
import { describeError } from '../errors.js';
import { useAction } from '../hooks.js';
import type { Workspace } from '../workspace.js';

export function UnlockBar({ workspace }: { workspace: Workspace }) {
  const [locked, setLocked] = useState(workspace.locked);
  const [password, setPassword] = useState('');
  const { busy, error, run } = useAction(describeError);
  useEffect(() => {
    setLocked(workspace.locked);
    return workspace.onLockChange(() => setLocked(workspace.locked));
  }, [workspace]);
  if (!locked) return null;
  return (
    <form
      class="card unlock"
      aria-label="Sign in to sync"
      onSubmit={(event) => {
        event.preventDefault();
        void run(() => workspace.unlock(password)).then((done) => done && setPassword(''));
      }}
    >
      <p>
        Your lists are on this device and can be edited. To sync them, type your password again: this browser does not
        store it.
      </p>
      <label>
        Password to sync
        <input
          type="password"
          autocomplete="current-password"
          value={password}
          onInput={(event) => setPassword(event.currentTarget.value)}
        />
      </label>
      <button type="submit" disabled={busy || password === ''}>
        Sync
      </button>
      {error && (
        <p class="error" role="alert">
          {error}
        </p>
      )}
    </form>
  );
}
