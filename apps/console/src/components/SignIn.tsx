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

/** What the server offers; picks the account method when there is one, else Basic Auth. */
function useServerProbe(server: string, setMethod: (method: Method) => void) {
  const [hello, setHello] = useState<ServerInfo | null>(null);
  const [probeError, setProbeError] = useState<string | null>(null);
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
  return { hello, probeError };
}

function signInMethods(hello: ServerInfo | null) {
  const offers = hello?.capabilities ?? {};
  const providers = ((offers.openid?.providers as OpenIdProvider[] | undefined) ?? []).filter(
    (provider) => provider && typeof provider.name === 'string',
  );
  const passwordMethods: Method[] = [
    ...('accounts' in offers ? (['account'] as const) : []),
    ...('basicauth' in offers ? (['basicauth'] as const) : []),
  ];
  return { providers, passwordMethods };
}

type Credentials = { username: string; password: string; remember: boolean };
type OnSignedIn = (session: Session, remember: boolean) => void;

/** Checks the credentials against the server before handing the session over. */
function useSignInAction(server: string, message: string | null, onSignedIn: OnSignedIn) {
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState<string | null>(message);
  useEffect(() => setError(message), [message]);

  async function signIn(kind: AuthKind, { username, password, remember }: Credentials) {
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
  return { busy, error, signIn };
}

export function SignIn({ message, onSignedIn }: { message: string | null; onSignedIn: OnSignedIn }) {
  const [serverInput, setServerInput] = useState(() => defaultServer());
  const server = normaliseServerUrl(useDebounced(serverInput, 400) || 'http://127.0.0.1:8888');
  const [method, setMethod] = useState<Method>('account');
  const { hello, probeError } = useServerProbe(server, setMethod);
  const [username, setUsername] = useState('');
  const [password, setPassword] = useState('');
  const [remember, setRemember] = useState(false);
  const { busy, error, signIn } = useSignInAction(server, message, onSignedIn);
  const { providers, passwordMethods } = signInMethods(hello);
  const activeMethod = passwordMethods.includes(method) ? method : passwordMethods[0];
  const submit = (kind: AuthKind) => void signIn(kind, { username, password, remember });

  return (
    <main class="signin">
      <div class="signin-card">
        <Brand />
        <h1 class="visually-hidden">Sign in</h1>
        <ServerField hello={hello} probeError={probeError} value={serverInput} onInput={setServerInput} />
        {hello && passwordMethods.length > 0 ? (
          <form class="signin-form" onSubmit={onSubmit(() => activeMethod && submit(activeMethod))}>
            <MethodPicker methods={passwordMethods} active={activeMethod} onPick={setMethod} />
            <Field label="Username">
              <input
                value={username}
                onInput={(event) => setUsername(event.currentTarget.value)}
                autocomplete="username"
                required
                spellcheck={false}
              />
            </Field>
            <PasswordField basicAuth={activeMethod === 'basicauth'} value={password} onInput={setPassword} />
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
        <OpenIdButtons providers={providers} onPick={(provider) => startOpenIdLogin(server, provider, remember)} />
        {hello ? (
          <button type="button" class="link-button" onClick={() => submit('anonymous')}>
            Continue without signing in (public data only)
          </button>
        ) : null}
      </div>
      <p class="signin-foot">The console talks to the server with your credentials, over its public API only.</p>
    </main>
  );
}

function Brand() {
  return (
    <div class="brand large">
      <img src="./favicon.svg" alt="" width={36} height={36} />
      <div>
        <div class="brand-name">Quire Console</div>
        <div class="brand-sub">Browse and manage the data of a Kinto-protocol server</div>
      </div>
    </div>
  );
}

function ServerField(props: {
  hello: ServerInfo | null;
  probeError: string | null;
  value: string;
  onInput: (value: string) => void;
}) {
  const { hello, probeError } = props;
  return (
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
        value={props.value}
        onInput={(event) => props.onInput(event.currentTarget.value)}
        spellcheck={false}
        autocomplete="url"
      />
    </Field>
  );
}

function MethodPicker(props: { methods: Method[]; active: Method | undefined; onPick: (method: Method) => void }) {
  if (props.methods.length <= 1) return null;
  return (
    <div class="segmented" role="radiogroup" aria-label="Sign in with">
      {props.methods.map((candidate) => (
        <label key={candidate} class={candidate === props.active ? 'segment active' : 'segment'}>
          <input
            type="radio"
            name="method"
            checked={candidate === props.active}
            onChange={() => props.onPick(candidate)}
          />
          {candidate === 'account' ? 'Account' : 'Basic Auth'}
        </label>
      ))}
    </div>
  );
}

function PasswordField(props: { basicAuth: boolean; value: string; onInput: (value: string) => void }) {
  return (
    <Field
      label="Password"
      hint={
        props.basicAuth ? 'With Basic Auth, every username and password pair is an identity of its own.' : undefined
      }
    >
      <input
        type="password"
        value={props.value}
        onInput={(event) => props.onInput(event.currentTarget.value)}
        autocomplete="current-password"
        required
      />
    </Field>
  );
}

function OpenIdButtons(props: { providers: OpenIdProvider[]; onPick: (provider: OpenIdProvider) => void }) {
  if (!props.providers.length) return null;
  return (
    <div class="signin-providers">
      <div class="divider">
        <span>or</span>
      </div>
      {props.providers.map((provider) => (
        <button key={provider.name} type="button" class="button secondary block" onClick={() => props.onPick(provider)}>
          Sign in with {provider.name}
        </button>
      ))}
    </div>
  );
}
