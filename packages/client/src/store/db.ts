/**
 * One IndexedDB database per local collection: `records` (indexes the app declares) plus the
 * `$`-prefixed internal tables. The schema is derived from the declared indexes; when they change
 * the database is reopened at the next version (Dexie upgrades the indexes in place).
 */
import Dexie, { type Table } from 'dexie';
import { StoreError } from '../errors.js';
import type { ConflictEntry, LocalRecord, LockEntry, MetaEntry, OutboxEntry } from './types.js';

export interface DexieEnvironment {
  indexedDB: IDBFactory;
  IDBKeyRange: typeof IDBKeyRange;
}

export interface CollectionDb extends Dexie {
  records: Table<LocalRecord, string>;
  $outbox: Table<OutboxEntry, string>;
  $meta: Table<MetaEntry, string>;
  $conflicts: Table<ConflictEntry, string>;
  $locks: Table<LockEntry, string>;
}

function schemaFor(indexes: readonly string[]): Record<string, string> {
  for (const index of indexes) {
    if (!/^[&*]?(\[[A-Za-z0-9_.+]+\]|[A-Za-z0-9_.]+)$/.test(index) || index === 'id') {
      throw new StoreError('QUIRE_ERR_STORE_SCHEMA', `Invalid index declaration: ${JSON.stringify(index)}`);
    }
  }
  return {
    records: ['id', 'last_modified', ...indexes].join(','),
    $outbox: 'id,seq',
    $meta: 'key',
    $conflicts: 'id',
    $locks: 'name',
  };
}

function describe(db: Dexie): string {
  return db.tables
    .map(
      (table) =>
        `${table.name}:${[table.schema.primKey.src, ...table.schema.indexes.map((i) => i.src).sort()].join(',')}`,
    )
    .sort()
    .join(';');
}

function describeSchema(schema: Record<string, string>): string {
  return Object.entries(schema)
    .map(([name, spec]) => {
      const [primary, ...indexes] = spec.split(',');
      return `${name}:${[primary, ...indexes.sort()].join(',')}`;
    })
    .sort()
    .join(';');
}

export async function openCollectionDb(
  name: string,
  indexes: readonly string[],
  env?: DexieEnvironment,
): Promise<CollectionDb> {
  const schema = schemaFor(indexes);
  if (env && !Dexie.dependencies.indexedDB) {
    // Dexie's liveQuery refuses to run unless a *global* IndexedDB was found (Node, tests);
    // an injected environment stands in for it.
    Dexie.dependencies.indexedDB = env.indexedDB;
    Dexie.dependencies.IDBKeyRange = env.IDBKeyRange;
  }
  const options = env ? { indexedDB: env.indexedDB, IDBKeyRange: env.IDBKeyRange } : {};
  let version = 1;
  const probe = new Dexie(name, options);
  try {
    await probe.open();
    const same = describe(probe) === describeSchema(schema);
    version = same ? probe.verno : Math.floor(probe.verno) + 1;
  } catch (error) {
    if ((error as Error).name !== 'NoSuchDatabaseError')
      throw new StoreError('QUIRE_ERR_STORE_OPEN', `Cannot open ${name}`, { cause: error });
  } finally {
    probe.close();
  }
  // Dexie's query cache serves Dexie's own live queries, which the SDK does not use (its live
  // queries follow the collection's change events: api/live-query.ts): off.
  const db = new Dexie(name, { ...options, cache: 'disabled' }) as CollectionDb;
  db.version(version).stores(schema);
  try {
    await db.open();
  } catch (error) {
    throw new StoreError('QUIRE_ERR_STORE_OPEN', `Cannot open ${name}`, { cause: error });
  }
  return db;
}
