/** Log in, sign up, continue as an account remembered on this device, or go without an account. */
import { useState } from 'preact/hooks';
import { describeError } from '../errors.js';
import { useAction } from '../hooks.js';
import { type AccountSession, logIn, rememberedAccounts, type Session, signUp } from '../session.js';

export function LoginScreen({ remote, onSession }: { remote: string; onSession: (session: Session) => void }) {
  const [username, setUsername] = useState('');
  const [password, setPassword] = useState('');
  const { busy, error, run } = useAction(describeError);
  const remembered = rememberedAccounts();

  const submit = (mode: 'log-in' | 'sign-up') =>
    void run(async () => {
      const session: AccountSession = await (mode === 'log-in' ? logIn : signUp)(remote, username, password);
      onSession(session);
    });

  return (
    <main class="login">
      <h1>Quire Tasks</h1>
      <p class="lede">
        A shared task board that keeps working offline. Your lists live in this browser and sync with the Quire server
        at <code>{remote}</code>.
      </p>

      {remembered.length > 0 && <RememberedAccounts accounts={remembered} onSession={onSession} />}

      <form
        class="card"
        aria-labelledby="login-title"
        onSubmit={(event) => {
          event.preventDefault();
          submit('log-in');
        }}
      >
        <h2 id="login-title">Log in or create an account</h2>
        <label>
          Username
          <input
            name="username"
            autocomplete="username"
            value={username}
            onInput={(event) => setUsername(event.currentTarget.value)}
          />
        </label>
        <label>
          Password
          <input
            name="password"
            type="password"
            autocomplete="current-password"
            value={password}
            onInput={(event) => setPassword(event.currentTarget.value)}
          />
        </label>
        <div class="buttons">
          <button type="submit" disabled={busy}>
            Log in
          </button>
          <button type="button" class="secondary" disabled={busy} onClick={() => submit('sign-up')}>
            Create account
          </button>
        </div>
        {busy && (
          <p class="muted" role="status">
            Contacting the server…
          </p>
        )}
        {error && (
          <p class="error" role="alert">
            {error}
          </p>
        )}
      </form>

      <LocalOnly onSession={onSession} />
    </main>
  );
}

function RememberedAccounts({
  accounts,
  onSession,
}: {
  accounts: AccountSession[];
  onSession: (session: Session) => void;
}) {
  return (
    <section class="card" aria-labelledby="continue-title">
      <h2 id="continue-title">Continue on this device</h2>
      <div class="buttons">
        {accounts.map((account) => (
          <button key={account.username} type="button" onClick={() => onSession(account)}>
            Continue as {account.username}
          </button>
        ))}
      </div>
    </section>
  );
}

/** The board without an account: this browser only. */
function LocalOnly({ onSession }: { onSession: (session: Session) => void }) {
  return (
    <section class="card" aria-labelledby="local-title">
      <h2 id="local-title">No account?</h2>
      <p>
        Use the board on this device only: lists are kept in this browser and never sent to the server, so they cannot
        be shared.
      </p>
      <button type="button" class="secondary" onClick={() => onSession({ kind: 'local' })}>
        Use without an account
      </button>
    </section>
  );
}
