/**
 * Sign-in: which server, then one of the ways it offers (from `GET /` capabilities): an account,
 * Basic Auth, an OpenID provider, or no identity at all (public data only).
 */
import { useEffect, useState } from 'preact/hooks';
import type { OpenIdProvider, ServerInfo } from '@quire/client/admin';
import { useDebounced } from '../lib/hooks.js';
import { connect, explain, isAbort, normaliseServerUrl, statusOf } from '../lib/remote.js';
import { type AuthKind, basicAuthorization, defaultServer, type Session, startOpenIdLogin } from '../lib/session.js';
import { Field, FormError, onSubmit } from './ui.js';

type Method = 'account' | 'basicauth';

export function SignIn({
  message,
  onSignedIn,
}: {
  message: string | null;
  onSignedIn: (session: Session, remember: boolean) => void;
}) {
  const [serverInput, setServerInput] = useState(() => defaultServer());
  const server = normaliseServerUrl(useDebounced(serverInput, 400) || 'http://127.0.0.1:8888');
  const [hello, setHello] = useState<ServerInfo | null>(null);
  const [probeError, setProbeError] = useState<string | null>(null);
  const [method, setMethod] = useState<Method>('account');
  const [username, setUsername] = useState('');
  const [password, setPassword] = useState('');
  const [remember, setRemember] = useState(false);
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState<string | null>(message);

  useEffect(() => setError(message), [message]);

  // What the server offers.
  useEffect(() => {
    const controller = new AbortController();
    setHello(null);
    setProbeError(null);
    connect(server, null)
      .hello(controller.signal)
      .then(
        (answer) => {
          setHello(answer);
          const offers = answer.capabilities;
          if (!('accounts' in offers) && 'basicauth' in offers) setMethod('basicauth');
          if ('accounts' in offers) setMethod('account');
        },
        (caught: unknown) => {
          if (isAbort(caught)) return;
          setProbeError(explain(caught, server));
        },
      );
    return () => controller.abort();
  }, [server]);

  const offers = hello?.capabilities ?? {};
  const hasAccounts = 'accounts' in offers;
  const hasBasic = 'basicauth' in offers;
  const providers = ((offers.openid?.providers as OpenIdProvider[] | undefined) ?? []).filter(
    (provider) => provider && typeof provider.name === 'string',
  );
  const passwordMethods: Method[] = [
    ...(hasAccounts ? (['account'] as const) : []),
    ...(hasBasic ? (['basicauth'] as const) : []),
  ];
  const activeMethod = passwordMethods.includes(method) ? method : passwordMethods[0];

  async function signIn(kind: AuthKind) {
    setBusy(true);
    setError(null);
    try {
      const authorization = kind === 'anonymous' ? null : basicAuthorization(username, password);
      const answer = await connect(server, authorization).hello();
      const userId = answer.user?.id;
      if (kind === 'account' && userId !== `account:${username}`) throw new Error('Wrong username or password.');
      if (kind === 'basicauth' && !userId?.startsWith('basicauth:'))
        throw new Error('The server did not accept these credentials.');
      onSignedIn({ server, kind, authorization, label: kind === 'anonymous' ? 'anonymous' : username }, remember);
    } catch (caught) {
      if (statusOf(caught) === 429) setError('Too many failed attempts: wait a few minutes before trying again.');
      else if (statusOf(caught) === 401) setError('Wrong username or password.');
      else setError(explain(caught, server));
    } finally {
      setBusy(false);
    }
  }

  return (
    <main class="signin">
      <div class="signin-card">
        <div class="brand large">
          <img src="./favicon.svg" alt="" width={36} height={36} />
          <div>
            <div class="brand-name">Quire Console</div>
            <div class="brand-sub">Browse and manage the data of a Kinto-protocol server</div>
          </div>
        </div>
        <h1 class="visually-hidden">Sign in</h1>

        <Field
          label="Server"
          hint={
            hello ? (
              <span class="server-ok">
                ● {hello.project_name} {hello.project_version} · API {hello.http_api_version}
              </span>
            ) : probeError ? (
              <span class="server-bad">{probeError}</span>
            ) : (
              'Connecting…'
            )
          }
        >
          <input
            type="url"
            value={serverInput}
            onInput={(event) => setServerInput(event.currentTarget.value)}
            spellcheck={false}
            autocomplete="url"
          />
        </Field>

        {hello && passwordMethods.length > 0 ? (
          <form class="signin-form" onSubmit={onSubmit(() => activeMethod && void signIn(activeMethod))}>
            {passwordMethods.length > 1 ? (
              <div class="segmented" role="radiogroup" aria-label="Sign in with">
                {passwordMethods.map((candidate) => (
                  <label key={candidate} class={candidate === activeMethod ? 'segment active' : 'segment'}>
                    <input
                      type="radio"
                      name="method"
                      checked={candidate === activeMethod}
                      onChange={() => setMethod(candidate)}
                    />
                    {candidate === 'account' ? 'Account' : 'Basic Auth'}
                  </label>
                ))}
              </div>
            ) : null}
            <Field label="Username">
              <input
                value={username}
                onInput={(event) => setUsername(event.currentTarget.value)}
                autocomplete="username"
                required
                spellcheck={false}
              />
            </Field>
            <Field
              label="Password"
              hint={
                activeMethod === 'basicauth'
                  ? 'With Basic Auth, every username and password pair is an identity of its own.'
                  : undefined
              }
            >
              <input
                type="password"
                value={password}
                onInput={(event) => setPassword(event.currentTarget.value)}
                autocomplete="current-password"
                required
              />
            </Field>
            <label class="checkbox">
              <input
                type="checkbox"
                checked={remember}
                onChange={(event) => setRemember(event.currentTarget.checked)}
              />
              Keep me signed in (OpenID only: an account stays signed in in this tab until it reloads)
            </label>
            <FormError error={error} />
            <button type="submit" class="button block" disabled={busy || !username || !password}>
              {busy ? 'Signing in…' : activeMethod === 'account' ? 'Sign in with your account' : 'Sign in'}
            </button>
          </form>
        ) : hello ? (
          <FormError error={error} />
        ) : null}

        {providers.length ? (
          <div class="signin-providers">
            <div class="divider">
              <span>or</span>
            </div>
            {providers.map((provider) => (
              <button
                key={provider.name}
                type="button"
                class="button secondary block"
                onClick={() => startOpenIdLogin(server, provider, remember)}
              >
                Sign in with {provider.name}
              </button>
            ))}
          </div>
        ) : null}

        {hello ? (
          <button type="button" class="link-button" onClick={() => void signIn('anonymous')}>
            Continue without signing in (public data only)
          </button>
        ) : null}
      </div>
      <p class="signin-foot">The console talks to the server with your credentials, over its public API only.</p>
    </main>
  );
}
