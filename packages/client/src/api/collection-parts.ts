/** What a collection is made of (client.ts opens them, api/collection.ts uses them). */
import type { OnlineSource } from '../online.js';
import type { LocalCollection } from '../store/local-collection.js';
import type { SyncEngine } from '../sync/engine.js';
import type { LiveChanges } from '../sync/live-changes.js';
import type { RecoverySource } from '../sync/scheduler.js';
import type { SyncLock } from '../tabs/locks.js';
import type { TransformChain } from '../transform/transformers.js';
import type { AttachmentsExtension } from './attachments-host.js';
import type { CollectionChannel } from './collection-channel.js';

export interface CollectionParts {
  local: LocalCollection;
  engine: SyncEngine;
  /** This tab's listeners and the other tabs: changes and the sync status. */
  channel: CollectionChannel;
  /** The client's live changes (one connection for all its collections). */
  live?: LiveChanges;
  online: OnlineSource;
  /** The server answers again after an outage: auto-sync stops waiting out its back-off. */
  recovered: RecoverySource;
  /** Elects the one tab that auto-syncs this replica. */
  leaderLock: SyncLock;
  /** Names the replica (the IndexedDB database), hence the leadership. */
  dbName: string;
  /** When the replica last completed a pull (null: never). */
  lastSyncAt: number | null;
  /** The collection's remote transformers, if any (dumps hold records as the server stores them). */
  transform: TransformChain | null;
  /** Offline attachments, when the collection was opened with them. */
  files?: AttachmentsExtension;
  close: () => Promise<void>;
}
