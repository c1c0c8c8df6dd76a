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

export function CollectionPage({ route }: { route: CollectionRoute }) {
  const { api } = useConsole();
  const capabilities = useCapabilities();
  const { bid, cid, tab, query } = route;
  const collection = useAsync((signal) => api.getObject(paths.collection(bid, cid), signal), [bid, cid]);
  // The bucket's `record:schema` applies to every record too (API 1.20); readers of the bucket only.
  const bucket = useAsync((signal) => api.getObject(paths.bucket(bid), signal).catch(() => null), [bid]);
  const [importing, setImporting] = useState(false);
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
  const panelOpen = tab === 'records' && (route.rid !== undefined || route.isNew === true);

  const tabs = [
    {
      id: 'records',
      label: 'Records',
      href: href.collection(bid, cid, 'records', tab === 'records' ? query : undefined),
      count: null,
    },
    ...(capabilities.history ? [{ id: 'history', label: 'History', href: href.collection(bid, cid, 'history') }] : []),
    { id: 'permissions', label: 'Permissions', href: href.collection(bid, cid, 'permissions') },
    {
      id: 'attributes',
      label: schema ? 'Schema & attributes' : 'Attributes',
      href: href.collection(bid, cid, 'attributes'),
    },
  ];

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
        {object ? (
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
        ) : null}
      </PageHeader>
      <Tabs label="Collection sections" tabs={tabs} current={tab} />
      {collection.error ? <ErrorNotice error={collection.error} onRetry={collection.reload} /> : null}

      {tab === 'records' ? (
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
            onReload={() => setVersion((value) => value + 1)}
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
      ) : tab === 'history' ? (
        <HistoryView bid={bid} fixed={{ collection_id: cid }} />
      ) : !object ? (
        collection.loading ? (
          <Spinner />
        ) : null
      ) : tab === 'permissions' ? (
        <PermissionsEditor
          kind="collection"
          uri={uris.collection(bid, cid)}
          path={paths.collection(bid, cid)}
          permissions={collection.data!.permissions}
          onSaved={(data, permissions) => collection.set({ data, permissions, etag: null })}
        />
      ) : (
        <AttributesEditor
          noun="collection"
          path={paths.collection(bid, cid)}
          object={object}
          onSaved={(data) => collection.set({ ...collection.data!, data })}
          onDeleted={() => navigate(href.bucket(bid))}
          deleteWarning={<p>Every record of this collection will be deleted. This cannot be undone.</p>}
          help={
            <>
              <Code>schema</Code>: a JSON schema (Draft 7) that records must match
              {capabilities.schema
                ? ''
                : ' (this server does not validate schemas, but the console still generates its form from it)'}
              ; <Code>displayFields</Code>: the columns of the records list; <Code>cache_expires</Code>: seconds
              anonymous readers may cache records.
            </>
          }
        />
      )}
      {importing ? (
        <ImportDialog
          bid={bid}
          cid={cid}
          schema={schema}
          onClose={() => setImporting(false)}
          onImported={() => setVersion((value) => value + 1)}
        />
      ) : null}
    </div>
  );
}
