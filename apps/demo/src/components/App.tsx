/** The app: the login screen, or the board of the signed-in user (or of this device, without an account). */
import { useEffect, useMemo, useState } from 'preact/hooks';
import type { AppConfig } from '../config.js';
import { useRecords } from '@quire/react';
import { useOnline, useSelectedListId } from '../hooks.js';
import { byPosition } from '../order.js';
import { currentSession, endSession, type Session, startSession } from '../session.js';
import { type Notice, Workspace } from '../workspace.js';
import { Board } from './Board.js';
import { ListsPanel } from './ListsPanel.js';
import { LoginScreen } from './LoginScreen.js';
import { Notices } from './Notices.js';
import { StatusBar } from './StatusBar.js';
import { UnlockBar } from './UnlockBar.js';

export function App({ config }: { config: AppConfig }) {
  const [session, setSession] = useState<Session | null>(currentSession);
  if (!session) {
    return (
      <LoginScreen
        remote={config.remote}
        onSession={(chosen) => {
          startSession(chosen);
          setSession(chosen);
        }}
      />
    );
  }
  return (
    <Home
      key={session.kind === 'account' ? session.username : '(local)'}
      config={config}
      session={session}
      onLogOut={() => {
        endSession(session);
        location.hash = '';
        setSession(null);
      }}
    />
  );
}

function Home({ config, session, onLogOut }: { config: AppConfig; session: Session; onLogOut: () => void }) {
  const workspace = useMemo(() => new Workspace(config, session), [config, session]);
  const [notices, setNotices] = useState<Notice[]>([]);
  useEffect(() => {
    workspace.start();
    const stop = workspace.onNotice((notice) => setNotices((current) => [...current, notice]));
    return () => {
      stop();
      void workspace.close();
    };
  }, [workspace]);

  const online = useOnline();
  const records = useRecords(workspace.registry);
  const entries = useMemo(() => byPosition(records ?? []), [records]);
  const [selectedId, select] = useSelectedListId();
  const selected = entries.find((entry) => entry.id === selectedId) ?? (selectedId === null ? entries[0] : undefined);

  return (
    <div class="app">
      <header class="topbar">
        <h1>Quire Tasks</h1>
        <div class="account">
          {session.kind === 'account' ? (
            <span>
              Signed in as <strong>{session.username}</strong>
            </span>
          ) : (
            <span>
              <strong>Local only</strong> (no account)
            </span>
          )}
          <button type="button" class="secondary" onClick={onLogOut}>
            {session.kind === 'account' ? 'Log out' : 'Leave local mode'}
          </button>
        </div>
      </header>
      <UnlockBar workspace={workspace} />
      <StatusBar source={workspace.status} onSyncNow={() => workspace.syncNow()} />
      <Notices
        notices={notices}
        onDismiss={(id) => setNotices((current) => current.filter((notice) => notice.id !== id))}
      />
      <div class="layout">
        <ListsPanel
          workspace={workspace}
          entries={records === undefined ? undefined : entries}
          selectedId={selected?.id ?? null}
          onCreated={select}
        />
        {selected ? (
          <Board
            key={selected.id}
            workspace={workspace}
            entry={selected}
            online={online}
            onDeleted={() => select(null)}
          />
        ) : (
          <section class="board empty" aria-label="No list selected">
            {records === undefined ? (
              <p class="muted">Opening your lists…</p>
            ) : selectedId !== null ? (
              <p>This list is not available (any more). Choose another list.</p>
            ) : (
              <p>No lists yet. Create your first list on the left.</p>
            )}
          </section>
        )}
      </div>
    </div>
  );
}
