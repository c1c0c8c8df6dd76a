/**
 * A collection's messages to its other tabs (one BroadcastChannel per replica): the changes made
 * here, coalesced per event-loop turn (one message for a burst of writes), and the sync status.
 */
import { createTabChannel } from '../tabs/broadcast.js';
import type { ChangeEvent } from './events.js';
import type { SharedSyncStatus } from './sync-status.js';

type CollectionMessage =
  | { kind: 'change'; source: 'local' | 'sync'; changes: ChangeEvent['changes'] }
  | { kind: 'status'; status: SharedSyncStatus };

export interface CollectionChannel {
  /** Tells this tab's listeners (`emit`) and the other tabs. */
  broadcast(event: ChangeEvent): void;
  shareStatus(status: SharedSyncStatus): void;
  close(): void;
}

export function createCollectionChannel(
  dbName: string,
  tabId: string,
  handlers: { emit: (event: ChangeEvent) => void; status: (status: SharedSyncStatus) => void },
): CollectionChannel {
  const channel = createTabChannel<CollectionMessage>(`quire-changes:${dbName}`, tabId);
  channel.subscribe((message) => {
    if (message?.kind === 'change') handlers.emit({ source: 'tab', tab: message.source, changes: message.changes });
    else if (message?.kind === 'status') handlers.status(message.status);
  });
  let outgoing: { source: 'local' | 'sync'; changes: ChangeEvent['changes'] } | null = null;
  const flush = () => {
    if (outgoing) channel.post({ kind: 'change', ...outgoing });
    outgoing = null;
  };
  return {
    broadcast(event) {
      handlers.emit(event);
      const source = event.source === 'sync' ? 'sync' : 'local';
      if (outgoing && outgoing.source !== source) flush();
      if (!outgoing) {
        outgoing = { source, changes: [] };
        setTimeout(flush, 0);
      }
      outgoing.changes.push(...event.changes);
    },
    shareStatus(status) {
      channel.post({ kind: 'status', status });
    },
    close() {
      flush();
      channel.close();
    },
  };
}
