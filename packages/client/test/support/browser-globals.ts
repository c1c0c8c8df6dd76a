/**
 * A browser's IndexedDB globals (fake-indexeddb) for a test file that runs code written for the
 * browser. Import it first: Dexie looks for `indexedDB` once, when it loads.
 */
import { IDBFactory, IDBKeyRange } from 'fake-indexeddb';

Object.assign(globalThis, { indexedDB: new IDBFactory(), IDBKeyRange });
