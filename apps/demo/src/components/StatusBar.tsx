/** Sync state at a glance: online or not, pending changes, conflicts, last sync, progress, problems. */
import { useState } from 'preact/hooks';
import { useStatusBar } from '../hooks.js';
import type { SyncStatus } from '../sync-status.js';

const plural = (count: number, one: string, many: string) => `${count.toLocaleString()} ${count === 1 ? one : many}`;

export function StatusBar({ source, onSyncNow }: { source: SyncStatus; onSyncNow: () => Promise<void> }) {
  const status = useStatusBar(source);
  const [syncing, setSyncing] = useState(false);

  if (status.mode === 'local') {
    return (
      <section class="status local" aria-label="Sync status">
        <span class="badge local">Local only</span>
        <span role="status">These lists are stored in this browser and never synced.</span>
      </section>
    );
  }

  const syncNow = async () => {
    setSyncing(true);
    try {
      await onSyncNow();
    } finally {
      setSyncing(false);
    }
  };
  const { progress } = status;
  const progressLabel = progress
    ? `${progress.phase === 'pull' ? 'Downloading' : 'Uploading'} ${progress.label}: ` +
      `${progress.done.toLocaleString()} of ${plural(progress.total, 'item', 'items')}`
    : '';

  return (
    <section class="status" aria-label="Sync status">
      <div class="status-line" role="status" aria-live="polite">
        <span class={`badge ${status.online ? 'online' : 'offline'}`}>{status.online ? 'Online' : 'Offline'}</span>
        {status.online && status.live && <LiveBadge live={status.live} />}
        <span class="pending">
          {status.pending === 0
            ? 'All changes synced'
            : `${plural(status.pending, 'change', 'changes')} not synced yet`}
          {!status.online && status.pending > 0 && ' (kept on this device)'}
        </span>
        {status.conflicts > 0 && (
          <span class="conflicts">{plural(status.conflicts, 'conflict', 'conflicts')} to resolve</span>
        )}
      </div>
      {/* Outside the live region: it changes at every sync and would be read out every few seconds. */}
      <span class="last-sync">
        {status.lastSyncAt ? `Last synced at ${new Date(status.lastSyncAt).toLocaleTimeString()}` : 'Not synced yet'}
      </span>
      <span class="spacer" />
      <button
        type="button"
        class="secondary"
        onClick={() => void syncNow()}
        disabled={!status.online || syncing}
        title={status.online ? undefined : 'Offline'}
      >
        {syncing ? 'Syncing…' : 'Sync now'}
      </button>
      {progress && (
        <div class="progress">
          <label for="sync-progress">{progressLabel}</label>
          <progress id="sync-progress" max={progress.total} value={progress.done} />
        </div>
      )}
      {status.error && (
        <p class="error" role="alert">
          {status.error}
        </p>
      )}
    </section>
  );
}

/** How changes by others arrive: pushed (a stream) or polled. */
function LiveBadge({ live }: { live: 'stream' | 'poll' }) {
  return (
    <span
      class="live"
      title={
        live === 'stream'
          ? 'Changes by others arrive as soon as they are made'
          : 'Changes by others are checked every few seconds'
      }
    >
      {live === 'stream' ? 'Live' : 'Polling'}
    </span>
  );
}
