/** A bucket: its collections, groups, history, permissions and attributes. */
import { statusOf } from '../lib/remote.js';
import { useState } from 'preact/hooks';
import type { KintoObject, Permissions } from '@quire/client/admin';
import { formatTimestamp, relativeTime } from '../lib/format.js';
import { useAsync } from '../lib/hooks.js';
import { paths, uris } from '../lib/objects.js';
import { type BucketTab, href, navigate } from '../lib/router.js';
import { AttributesEditor } from './AttributesEditor.js';
import { useCapabilities, useConsole } from './context.js';
import { CreateDialog } from './CreateDialog.js';
import { HistoryView } from './HistoryView.js';
import { type Column, ObjectList } from './ObjectList.js';
import { PermissionsEditor } from './PermissionsEditor.js';
import { ErrorNotice, PageHeader, Spinner, Tabs } from './ui.js';

const COLLECTION_COLUMNS: Column[] = [
  {
    label: 'Schema',
    width: '110px',
    render: (item) =>
      item.schema && Object.keys(item.schema as object).length ? (
        <span class="badge ok">schema</span>
      ) : (
        <span class="muted">—</span>
      ),
  },
  {
    label: 'Display fields',
    width: 'minmax(140px, 1.5fr)',
    render: (item) => (Array.isArray(item.displayFields) ? (item.displayFields as string[]).join(', ') : ''),
  },
];

const GROUP_COLUMNS: Column[] = [
  {
    label: 'Members',
    width: '120px',
    render: (item) => (Array.isArray(item.members) ? String(item.members.length) : '0'),
  },
];

const DELETE_WARNING =
  'Every collection, record and group of this bucket, and its history, will be deleted. This cannot be undone.';

function bucketTabs(bid: string, history: boolean) {
  return [
    { id: 'collections', label: 'Collections', href: href.bucket(bid) },
    { id: 'groups', label: 'Groups', href: href.bucket(bid, 'groups') },
    ...(history ? [{ id: 'history', label: 'History', href: href.bucket(bid, 'history') }] : []),
    { id: 'permissions', label: 'Permissions', href: href.bucket(bid, 'permissions') },
    { id: 'attributes', label: 'Attributes', href: href.bucket(bid, 'attributes') },
  ];
}

/** The bucket's id and age, and the button that creates a collection or group (null: none here). */
function BucketHeader({
  bid,
  object,
  onCreate,
  createLabel,
}: {
  bid: string;
  object: KintoObject | undefined;
  onCreate: (() => void) | null;
  createLabel: string;
}) {
  return (
    <PageHeader
      kicker="Bucket"
      title={bid}
      actions={
        onCreate ? (
          <button type="button" class="button" onClick={onCreate}>
            {createLabel}
          </button>
        ) : null
      }
    >
      {object ? (
        <span title={formatTimestamp(object.last_modified)}>Modified {relativeTime(object.last_modified)}</span>
      ) : null}
    </PageHeader>
  );
}

export function BucketPage({ bid, tab }: { bid: string; tab: BucketTab }) {
  const { api } = useConsole();
  const capabilities = useCapabilities();
  const bucket = useAsync((signal) => api.getObject(paths.bucket(bid), signal), [bid]);
  const [creating, setCreating] = useState<'collection' | 'group' | null>(null);
  const [listVersion, setListVersion] = useState(0);
  const object = bucket.data?.data;
  const tabs = bucketTabs(bid, capabilities.history);
  const canCreate = !capabilities.readonly && (tab === 'collections' || tab === 'groups');

  return (
    <div class={tab === 'collections' || tab === 'groups' || tab === 'history' ? 'page fill' : 'page'}>
      <BucketHeader
        bid={bid}
        object={object}
        onCreate={canCreate ? () => setCreating(tab === 'groups' ? 'group' : 'collection') : null}
        createLabel={tab === 'groups' ? 'New group' : 'New collection'}
      />
      <Tabs label="Bucket sections" tabs={tabs} current={tab} />
      {bucket.error && (tab === 'permissions' || tab === 'attributes' || statusOf(bucket.error) === 404) ? (
        <ErrorNotice error={bucket.error} onRetry={bucket.reload} />
      ) : null}
      {tab === 'collections' ? (
        <ObjectList
          path={`${paths.bucket(bid)}/collections`}
          noun="collection"
          version={listVersion}
          linkOf={(collection) => href.collection(bid, collection.id)}
          columns={COLLECTION_COLUMNS}
          emptyText="No collection in this bucket yet."
        />
      ) : tab === 'groups' ? (
        <ObjectList
          path={`${paths.bucket(bid)}/groups`}
          noun="group"
          version={listVersion}
          linkOf={(group) => href.group(bid, group.id)}
          columns={GROUP_COLUMNS}
          emptyText="No group in this bucket yet. Groups name sets of users to grant permissions to at once."
        />
      ) : tab === 'history' ? (
        <HistoryView bid={bid} />
      ) : !object ? (
        bucket.loading ? (
          <Spinner />
        ) : null
      ) : tab === 'permissions' ? (
        <PermissionsEditor
          kind="bucket"
          uri={uris.bucket(bid)}
          path={paths.bucket(bid)}
          permissions={bucket.data!.permissions}
          onSaved={(data: KintoObject, permissions: Permissions) => bucket.set({ data, permissions, etag: null })}
        />
      ) : (
        <AttributesEditor
          noun="bucket"
          path={paths.bucket(bid)}
          object={object}
          onSaved={(data) => bucket.set({ ...bucket.data!, data })}
          onDeleted={() => navigate(href.buckets())}
          deleteWarning={<p>{DELETE_WARNING}</p>}
        />
      )}
      {creating ? (
        <NewInBucket
          bid={bid}
          kind={creating}
          onClose={() => setCreating(null)}
          onCreated={() => setListVersion((value) => value + 1)}
        />
      ) : null}
    </div>
  );
}

/** A new collection or group of the bucket, opened once created. */
function NewInBucket({
  bid,
  kind,
  onClose,
  onCreated,
}: {
  bid: string;
  kind: 'collection' | 'group';
  onClose: () => void;
  onCreated: () => void;
}) {
  return (
    <CreateDialog
      noun={kind}
      parentPath={paths.bucket(bid)}
      plural={kind === 'group' ? 'groups' : 'collections'}
      onClose={onClose}
      onCreated={(created) => {
        onClose();
        onCreated();
        navigate(kind === 'group' ? href.group(bid, created.id) : href.collection(bid, created.id));
      }}
    />
  );
}
