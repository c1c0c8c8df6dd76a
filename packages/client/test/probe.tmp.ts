import { IDBFactory, IDBKeyRange } from 'fake-indexeddb';
import Dexie, { liveQuery } from 'dexie';
const db = new Dexie('x', { indexedDB: new IDBFactory(), IDBKeyRange }); db.version(1).stores({ records: 'id,n' }); await db.open();
console.log('opened');
liveQuery(() => db.table('records').toArray()).subscribe({ next: (r) => console.log('next', r), error: (e) => console.log('err', e) });
await new Promise((r) => setTimeout(r, 100));
await db.table('records').put({ id: 'a', n: 1 });
await new Promise((r) => setTimeout(r, 300));
process.exit(0);
