/**
 * A collection: its records (with the open record beside the list, which keeps its place), and
 * its history, permissions and attributes (the JSON schema among them).
 */
import { useState } from 'preact/hooks';
import type { KintoObject } from '@quire/client/admin';
import { formatTimestamp, relativeTime } from '../lib/format.js';
import { useAsync, usePagedList } from '../lib/hooks.js';
import { paths, uris } from '../lib/objects.js';
import { href, navigate, type Route } from '../lib/router.js';
import { isActiveSchema, type JsonSchema } from '../lib/schema.js';
import { AttributesEditor } from './AttributesEditor.js';
import { useCapabilities, useConsole } from './context.js';
import { HistoryView } from './HistoryView.js';
import { ImportDialog } from './ImportDialog.js';
import { PermissionsEditor } from './PermissionsEditor.js';
import { RecordPanel } from './RecordPanel.js';
import { RecordsTable } from './RecordsTable.js';
import { Code, ErrorNotice, PageHeader, Spinner, Tabs } from './ui.js';

type CollectionRoute = Extract<Route, { name: 'collection' }>;

/** The collection, its bucket's record schema and the records list of the current tab. */
function useCollectionData(route: CollectionRoute) {
  const { api } = useConsole();
  const { bid, cid, tab, query } = route;
  const collection = useAsync((signal) => api.getObject(paths.collection(bid, cid), signal), [bid, cid]);
  // The bucket's `record:schema` applies to every record too (API 1.20); readers of the bucket only.
  const bucket = useAsync((signal) => api.getObject(paths.bucket(bid), signal).catch(() => null), [bid]);
  const [version, setVersion] = useState(0);
  const listParams = String(query);
  const [state, list] = usePagedList<KintoObject>(
    api,
    tab === 'records' ? `${paths.collection(bid, cid)}/records` : null,
    listParams,
    { count: true },
    version,
  );
  const object = collection.data?.data ?? null;
  const schema: JsonSchema | null = object && isActiveSchema(object.schema) ? object.schema : null;
  const bucketSchema =
    bucket.data?.data && isActiveSchema(bucket.data.data['record:schema'])
      ? (bucket.data.data['record:schema'] as JsonSchema)
      : null;
  const reload = () => setVersion((value) => value + 1);
  return { collection, object, schema, bucketSchema, state, list, reload };
}

type CollectionData = ReturnType<typeof useCollectionData>;

function collectionTabs(route: CollectionRoute, hasHistory: boolean, schema: JsonSchema | null) {
  const { bid, cid, tab, query } = route;
  return [
    {
      id: 'records',
      label: 'Records',
      href: href.collection(bid, cid, 'records', tab === 'records' ? query : undefined),
      count: null,
    },
    ...(hasHistory ? [{ id: 'history', label: 'History', href: href.collection(bid, cid, 'history') }] : []),
    { id: 'permissions', label: 'Permissions', href: href.collection(bid, cid, 'permissions') },
    {
      id: 'attributes',
      label: schema ? 'Schema & attributes' : 'Attributes',
      href: href.collection(bid, cid, 'attributes'),
    },
  ];
}

export function CollectionPage({ route }: { route: CollectionRoute }) {
  const capabilities = useCapabilities();
  const { bid, cid, tab, query } = route;
  const data = useCollectionData(route);
  const { collection, object, schema } = data;
  const [importing, setImporting] = useState(false);

  return (
    <div class={tab === 'records' || tab === 'history' ? 'page fill' : 'page'}>
      <PageHeader
        kicker={
          <>
            Collection of bucket <a href={href.bucket(bid)}>{bid}</a>
          </>
        }
        title={cid}
        actions={
          tab === 'records' && !capabilities.readonly ? (
            <>
              <button type="button" class="button secondary" onClick={() => setImporting(true)}>
                Import…
              </button>
              <a class="button" href={href.newRecord(bid, cid, query)}>
                New record
              </a>
            </>
          ) : null
        }
      >
        {object ? <CollectionMeta object={object} schema={schema} /> : null}
      </PageHeader>
      <Tabs label="Collection sections" tabs={collectionTabs(route, capabilities.history, schema)} current={tab} />
      {collection.error ? <ErrorNotice error={collection.error} onRetry={collection.reload} /> : null}
      <CollectionTab route={route} data={data} />
      {importing ? (
        <ImportDialog
          bid={bid}
          cid={cid}
          schema={schema}
          onClose={() => setImporting(false)}
          onImported={data.reload}
        />
      ) : null}
    </div>
  );
}

function CollectionMeta({ object, schema }: { object: KintoObject; schema: JsonSchema | null }) {
  return (
    <>
      <span title={formatTimestamp(object.last_modified)}>Modified {relativeTime(object.last_modified)}</span>
      {schema ? (
        <>
          {' · '}
          <span class="badge ok" title="Records are validated against this collection's JSON schema">
            JSON schema
          </span>
        </>
      ) : null}
    </>
  );
}

function CollectionTab({ route, data }: { route: CollectionRoute; data: CollectionData }) {
  const { bid, cid, tab } = route;
  const { collection, object } = data;
  if (tab === 'records') return <CollectionRecords route={route} data={data} />;
  if (tab === 'history') return <HistoryView bid={bid} fixed={{ collection_id: cid }} />;
  if (!object) return collection.loading ? <Spinner /> : null;
  if (tab === 'permissions') {
    return (
      <PermissionsEditor
        kind="collection"
        uri={uris.collection(bid, cid)}
        path={paths.collection(bid, cid)}
        permissions={collection.data!.permissions}
        onSaved={(data, permissions) => collection.set({ data, permissions, etag: null })}
      />
    );
  }
  return <CollectionAttributes bid={bid} cid={cid} object={object} data={data} />;
}

function CollectionRecords({ route, data }: { route: CollectionRoute; data: CollectionData }) {
  const { bid, cid, query } = route;
  const { collection, object, schema, bucketSchema, state, list } = data;
  const panelOpen = route.rid !== undefined || route.isNew === true;
  return (
    <div class={panelOpen ? 'records-split with-panel' : 'records-split'}>
      <RecordsTable
        bid={bid}
        cid={cid}
        query={query}
        state={state}
        list={list}
        collection={object}
        schema={schema}
        selectedId={route.rid ?? null}
        onReload={data.reload}
        narrow={panelOpen}
      />
      {panelOpen && !collection.loading ? (
        <RecordPanel
          key={route.rid ?? '(new)'}
          bid={bid}
          cid={cid}
          rid={route.rid ?? null}
          tab={route.recordTab ?? 'edit'}
          query={query}
          schema={schema}
          bucketSchema={bucketSchema}
          list={list}
        />
      ) : null}
    </div>
  );
}

function CollectionAttributes(props: { bid: string; cid: string; object: KintoObject; data: CollectionData }) {
  const { bid, object, data } = props;
  const capabilities = useCapabilities();
  return (
    <AttributesEditor
      noun="collection"
      path={paths.collection(bid, props.cid)}
      object={object}
      onSaved={(saved) => data.collection.set({ ...data.collection.data!, data: saved })}
      onDeleted={() => navigate(href.bucket(bid))}
      deleteWarning={<p>Every record of this collection will be deleted. This cannot be undone.</p>}
      help={
        <>
          <Code>schema</Code>: a JSON schema (Draft 7) that records must match
          {capabilities.schema
            ? ''
            : ' (this server does not validate schemas, but the console still generates its form from it)'}
          ; <Code>displayFields</Code>: the columns of the records list; <Code>cache_expires</Code>: seconds anonymous
          readers may cache records.
        </>
      }
    />
  );
}
