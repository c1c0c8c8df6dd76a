/**
 * The console: the sign-in screen, or the signed-in shell and the page the URL names.
 * `GET /` tells who the credentials stand for and what the server offers; every page adapts to it.
 */
import { useCallback, useEffect, useMemo, useRef, useState } from 'preact/hooks';
import type { ServerInfo } from '@quire/client/admin';
import { asError, connect } from '../lib/remote.js';
import { navigate, type Route, useRoute } from '../lib/router.js';
import { clearSession, finishOpenIdLogin, loadSession, saveSession, type Session } from '../lib/session.js';
import { AccessPage } from './AccessPage.js';
import { AccountsPage } from './AccountsPage.js';
import { BucketPage } from './BucketPage.js';
import { BucketsPage } from './BucketsPage.js';
import { CollectionPage } from './CollectionPage.js';
import { ConsoleContext, type ConsoleContextValue, type ToastKind } from './context.js';
import { GroupPage } from './GroupPage.js';
import { HomePage } from './HomePage.js';
import { Shell } from './Shell.js';
import { SignIn } from './SignIn.js';
import { EmptyState, ErrorNotice, Spinner } from './ui.js';

interface Toast {
  id: number;
  message: string;
  kind: ToastKind;
}

export function App() {
  const route = useRoute();
  const [session, setSession] = useState<Session | null>(() => loadSession());
  const [signInMessage, setSignInMessage] = useState<string | null>(null);

  // The end of an OpenID login: the token is in the URL once, then replaced by the home page.
  useEffect(() => {
    if (route.name !== 'openid-callback') return;
    try {
      const { session: opened, remember } = finishOpenIdLogin(route.provider, route.token);
      saveSession(opened, remember);
      setSession(opened);
    } catch (error) {
      setSignInMessage((error as Error).message);
    }
    navigate('#/', { replace: true });
  }, [route]);

  const signOut = useCallback((message?: string) => {
    clearSession();
    setSession(null);
    setSignInMessage(message ?? null);
  }, []);

  if (!session || route.name === 'openid-callback') {
    return (
      <SignIn
        message={signInMessage}
        onSignedIn={(opened, remember) => {
          saveSession(opened, remember);
          setSignInMessage(null);
          setSession(opened);
        }}
      />
    );
  }
  return (
    <SignedIn
      key={`${session.server} ${session.authorization ?? ''}`}
      session={session}
      route={route}
      onSignOut={signOut}
    />
  );
}

function SignedIn({
  session,
  route,
  onSignOut,
}: {
  session: Session;
  route: Route;
  onSignOut: (message?: string) => void;
}) {
  const api = useMemo(() => connect(session.server, session.authorization), [session]);
  const [hello, setHello] = useState<ServerInfo | null>(null);
  const [error, setError] = useState<Error | null>(null);
  const [toasts, setToasts] = useState<Toast[]>([]);
  const nextToast = useRef(1);

  const refreshHello = useCallback(async () => {
    try {
      const answer = await api.hello();
      // Credentials the server no longer accepts (password changed, token expired).
      if (session.kind !== 'anonymous' && !answer.user) {
        onSignOut('The server no longer accepts these credentials. Sign in again.');
        return;
      }
      setHello(answer);
      setError(null);
    } catch (caught) {
      setError(asError(caught));
    }
  }, [api, session, onSignOut]);

  useEffect(() => {
    void refreshHello();
  }, [refreshHello]);

  const notify = useCallback((message: string, kind: ToastKind = 'success') => {
    const id = nextToast.current++;
    setToasts((current) => [...current.slice(-1), { id, message, kind }]);
    setTimeout(
      () => setToasts((current) => current.filter((toast) => toast.id !== id)),
      kind === 'error' ? 8000 : 3000,
    );
  }, []);

  if (!hello) {
    return (
      <div class="boot-screen">
        {error ? (
          <div class="boot-card">
            <ErrorNotice error={error} title="Cannot reach the server" onRetry={() => void refreshHello()} />
            <button type="button" class="button secondary" onClick={() => onSignOut()}>
              Sign in to another server
            </button>
          </div>
        ) : (
          <Spinner label="Connecting…" />
        )}
      </div>
    );
  }

  const context: ConsoleContextValue = { api, hello, session, notify, refreshHello };
  return (
    <ConsoleContext.Provider value={context}>
      <Shell route={route} onSignOut={() => onSignOut()}>
        <Page route={route} />
      </Shell>
      <div class="toasts" aria-live="polite">
        {toasts.map((toast) => (
          <div key={toast.id} class={`toast ${toast.kind}`} role={toast.kind === 'error' ? 'alert' : 'status'}>
            {toast.message}
          </div>
        ))}
      </div>
    </ConsoleContext.Provider>
  );
}

function Page({ route }: { route: Route }) {
  switch (route.name) {
    case 'home':
    case 'openid-callback':
      return <HomePage />;
    case 'buckets':
      return <BucketsPage />;
    case 'bucket':
      return <BucketPage key={route.bid} bid={route.bid} tab={route.tab} />;
    case 'collection':
      return <CollectionPage key={`${route.bid}/${route.cid}`} route={route} />;
    case 'group':
      return <GroupPage key={`${route.bid}/${route.gid}`} bid={route.bid} gid={route.gid} tab={route.tab} />;
    case 'access':
      return <AccessPage />;
    case 'accounts':
      return <AccountsPage />;
    case 'not-found':
      return (
        <EmptyState title="There is no such page">
          <p>
            <a href="#/">Back to the overview</a>
          </p>
        </EmptyState>
      );
  }
}
