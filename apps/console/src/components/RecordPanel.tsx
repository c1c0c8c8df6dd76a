/**
 * One record beside the list: its editor (RecordEditor), its file (when the server has the
 * `attachments` capability), history and permissions, in tabs.
 */
import type { KintoObject, Permissions } from '@quire/client/admin';
import { formatTimestamp, relativeTime } from '../lib/format.js';
import { useAsync, useEscape } from '../lib/hooks.js';
import { paths, uris } from '../lib/objects.js';
import type { PagedList } from '../lib/paged-list.js';
import { href, navigate, type RecordTab } from '../lib/router.js';
import type { JsonSchema } from '../lib/schema.js';
import { useCapabilities, useConsole } from './context.js';
import { HistoryView } from './HistoryView.js';
import { PermissionsEditor } from './PermissionsEditor.js';
import { RecordEditor } from './RecordEditor.js';
import { RecordFile } from './RecordFile.js';
import { Code, ErrorNotice, Spinner } from './ui.js';

interface RecordPanelProps {
  bid: string;
  cid: string;
  /** null: a new record. */
  rid: string | null;
  tab: RecordTab;
  query: URLSearchParams;
  schema: JsonSchema | null;
  bucketSchema: JsonSchema | null;
  list: PagedList<KintoObject> | null;
}

export function RecordPanel(props: RecordPanelProps) {
  const { api } = useConsole();
  const capabilities = useCapabilities();
  const { bid, cid, rid, query } = props;
  const record = useAsync(
    (signal): Promise<{ data: KintoObject | null; permissions: Permissions; etag: string | null }> =>
      rid
        ? api.getObject(paths.record(bid, cid, rid), signal)
        : Promise.resolve({ data: null, permissions: {}, etag: null }),
    [bid, cid, rid],
  );
  const close = () => navigate(href.collection(bid, cid, 'records', query));
  useEscape(() => {
    if (!document.querySelector('.backdrop')) close();
  });

  return (
    <aside class="panel" aria-label={rid ? `Record ${rid}` : 'New record'}>
      <RecordPanelHeader {...props} record={record.data?.data ?? null} onClose={close} />
      <div class="panel-body">
        {record.error ? (
          <ErrorNotice error={record.error} onRetry={record.reload} />
        ) : record.loading && rid ? (
          <Spinner />
        ) : props.tab === 'file' && rid && record.data?.data && capabilities.attachments ? (
          <RecordFile
            bid={bid}
            cid={cid}
            record={record.data.data}
            capability={capabilities.attachments}
            onChanged={(data: KintoObject) => {
              record.set({ ...record.data!, data });
              props.list?.update(data);
            }}
          />
        ) : props.tab === 'history' && rid ? (
          <HistoryView bid={bid} fixed={{ uri: uris.record(bid, cid, rid) }} compact />
        ) : props.tab === 'permissions' && rid && record.data?.data ? (
          <PermissionsEditor
            kind="record"
            uri={uris.record(bid, cid, rid)}
            path={paths.record(bid, cid, rid)}
            permissions={record.data.permissions}
            onSaved={(data: KintoObject, permissions: Permissions) => {
              record.set({ data, permissions, etag: null });
              props.list?.update(data);
            }}
          />
        ) : (
          <RecordEditor
            key={rid ?? '(new)'}
            {...props}
            record={record.data?.data ?? null}
            onSaved={(saved, created) => {
              if (created) {
                props.list?.prepend(saved);
                navigate(href.record(bid, cid, saved.id, 'edit', query), { replace: true });
              } else {
                record.set({ ...record.data!, data: saved });
                props.list?.update(saved);
              }
            }}
            onDeleted={() => {
              if (rid) props.list?.remove(rid);
              close();
            }}
          />
        )}
      </div>
    </aside>
  );
}

/** The record's id and version, a close button, and the tabs of its sections. */
function RecordPanelHeader({
  bid,
  cid,
  rid,
  query,
  tab: current,
  record,
  onClose,
}: RecordPanelProps & { record: KintoObject | null; onClose: () => void }) {
  const capabilities = useCapabilities();
  const tabs: Array<{ id: RecordTab; label: string }> = [
    { id: 'edit', label: rid ? 'Edit' : 'New record' },
    ...(rid && capabilities.attachments ? [{ id: 'file' as const, label: 'File' }] : []),
    ...(rid && capabilities.history ? [{ id: 'history' as const, label: 'History' }] : []),
    ...(rid ? [{ id: 'permissions' as const, label: 'Permissions' }] : []),
  ];
  return (
    <>
      <header class="panel-header">
        <div>
          <div class="kicker">{rid ? 'Record' : 'New record'}</div>
          <h2 class="panel-title">{rid ? <Code>{rid}</Code> : `in ${cid}`}</h2>
          {record ? (
            <div class="muted small" title={formatTimestamp(record.last_modified)}>
              Modified {relativeTime(record.last_modified)} · version {record.last_modified}
            </div>
          ) : null}
        </div>
        <button type="button" class="icon-button" aria-label="Close the record" onClick={onClose}>
          ×
        </button>
      </header>
      <nav class="tabs small" aria-label="Record sections">
        {tabs.map((tab) => (
          <a
            key={tab.id}
            class={tab.id === current ? 'tab active' : 'tab'}
            aria-current={tab.id === current ? 'page' : undefined}
            href={rid ? href.record(bid, cid, rid, tab.id, query) : href.newRecord(bid, cid, query)}
          >
            {tab.label}
          </a>
        ))}
      </nav>
    </>
  );
}
