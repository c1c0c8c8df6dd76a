/**
 * One record beside the list: edit it with the form the collection's schema generates or as
 * JSON, checked in the browser with the server's rules before it is sent; saved with If-Match,
 * so a change made meanwhile by someone else opens the conflict dialog instead of being lost.
 * Also its file (when the server has the `attachments` capability), history and permissions.
 */
import { useEffect, useMemo, useRef, useState } from 'preact/hooks';
import type { KintoObject, Permissions } from '@quire/client/admin';
import { statusOf } from '../lib/remote.js';
import { formatTimestamp, relativeTime } from '../lib/format.js';
import { useAsync, useEscape, useSaving, useValidator } from '../lib/hooks.js';
import { deleteObject, paths, putObject, uris } from '../lib/objects.js';
import type { PagedList } from '../lib/paged-list.js';
import { href, navigate, type RecordTab } from '../lib/router.js';
import { isActiveSchema, type JsonSchema, readablePath, type SchemaError } from '../lib/schema.js';
import { type SaveConflict, SaveConflictDialog } from './ConflictDialog.js';
import { DeleteButton, EditActions } from './EditActions.js';
import { useCapabilities, useConsole } from './context.js';
import { HistoryView } from './HistoryView.js';
import { JsonEditor, parseJson } from './JsonEditor.js';
import { PermissionsEditor } from './PermissionsEditor.js';
import { RecordFile } from './RecordFile.js';
import { SchemaForm } from './SchemaForm.js';
import { Code, ConfirmDialog, ErrorNotice, Field, Spinner } from './ui.js';

const SERVER_FIELDS = ['id', 'last_modified', 'schema'];

type EditorMode = 'form' | 'json';

function fieldsOf(record: Record<string, unknown>): Record<string, unknown> {
  return Object.fromEntries(Object.entries(record).filter(([key]) => !SERVER_FIELDS.includes(key)));
}

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
  const tabs: Array<{ id: RecordTab; label: string }> = [
    { id: 'edit', label: rid ? 'Edit' : 'New record' },
    ...(rid && capabilities.attachments ? [{ id: 'file' as const, label: 'File' }] : []),
    ...(rid && capabilities.history ? [{ id: 'history' as const, label: 'History' }] : []),
    ...(rid ? [{ id: 'permissions' as const, label: 'Permissions' }] : []),
  ];

  return (
    <aside class="panel" aria-label={rid ? `Record ${rid}` : 'New record'}>
      <header class="panel-header">
        <div>
          <div class="kicker">{rid ? 'Record' : 'New record'}</div>
          <h2 class="panel-title">{rid ? <Code>{rid}</Code> : `in ${cid}`}</h2>
          {record.data?.data ? (
            <div class="muted small" title={formatTimestamp(record.data.data.last_modified)}>
              Modified {relativeTime(record.data.data.last_modified)} · version {record.data.data.last_modified}
            </div>
          ) : null}
        </div>
        <button type="button" class="icon-button" aria-label="Close the record" onClick={close}>
          ×
        </button>
      </header>
      <nav class="tabs small" aria-label="Record sections">
        {tabs.map((tab) => (
          <a
            key={tab.id}
            class={tab.id === props.tab ? 'tab active' : 'tab'}
            aria-current={tab.id === props.tab ? 'page' : undefined}
            href={rid ? href.record(bid, cid, rid, tab.id, query) : href.newRecord(bid, cid, query)}
          >
            {tab.label}
          </a>
        ))}
      </nav>
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

function RecordEditor({
  bid,
  cid,
  rid,
  schema,
  bucketSchema,
  record,
  onSaved,
  onDeleted,
}: RecordPanelProps & {
  record: KintoObject | null;
  onSaved: (record: KintoObject, created: boolean) => void;
  onDeleted: () => void;
}) {
  const { api, notify } = useConsole();
  const { readonly } = useCapabilities();
  const hasSchema = isActiveSchema(schema);
  const [mode, setMode] = useState<EditorMode>(hasSchema ? 'form' : 'json');
  const [draft, setDraft] = useState<Record<string, unknown>>(() => fieldsOf(record ?? {}));
  const [text, setText] = useState(() => JSON.stringify(fieldsOf(record ?? {}), null, 2));
  const [newId, setNewId] = useState('');
  const [base, setBase] = useState<number | null>(record?.last_modified ?? null);
  const [showErrors, setShowErrors] = useState(false);
  const saving = useSaving();
  const { busy, setError } = saving;
  const [conflict, setConflict] = useState<SaveConflict | null>(null);
  const [confirmDelete, setConfirmDelete] = useState(false);
  const top = useRef<HTMLDivElement>(null);

  useEffect(() => {
    if (!record) return;
    setDraft(fieldsOf(record));
    setText(JSON.stringify(fieldsOf(record), null, 2));
    setBase(record.last_modified);
  }, [record]);

  // The record as it would be sent, from whichever editor is open.
  const parsed = mode === 'json' ? parseJson(text) : { value: draft };
  const current =
    parsed.value && typeof parsed.value === 'object' && !Array.isArray(parsed.value)
      ? (parsed.value as Record<string, unknown>)
      : null;
  const id = rid ?? (mode === 'json' && typeof current?.id === 'string' ? current.id : newId.trim() || undefined);
  const needsValidation = hasSchema || isActiveSchema(bucketSchema);
  const validator = useValidator(needsValidation);
  const errors: SchemaError[] = useMemo(() => {
    if (!current || !validator) return [];
    return [
      ...(hasSchema ? validator.validateRecord(current, schema!, id) : []),
      ...(isActiveSchema(bucketSchema) ? validator.validateRecord(current, bucketSchema, id) : []),
    ];
  }, [current, schema, bucketSchema, hasSchema, id, validator]);
  const original = JSON.stringify(fieldsOf(record ?? {}));
  const dirty = !record || (current ? JSON.stringify(fieldsOf(current)) !== original : true);

  function undo() {
    setDraft(fieldsOf(record ?? {}));
    setText(JSON.stringify(fieldsOf(record ?? {}), null, 2));
    setShowErrors(false);
    setError(null);
  }

  function switchMode(next: EditorMode) {
    if (next === mode) return;
    if (next === 'json') {
      setText(JSON.stringify(draft, null, 2));
      setMode('json');
      return;
    }
    if (!current) {
      setError('Fix the JSON before going back to the form.');
      return;
    }
    setError(null);
    setDraft(fieldsOf(current));
    if (!rid && typeof current.id === 'string') setNewId(current.id);
    setMode('form');
  }

  async function save(lastModified: number | null | undefined = base) {
    if (!current) {
      setError('The record must be a JSON object.');
      return;
    }
    setShowErrors(true);
    if (errors.length) {
      // The summary is at the top of the editor; the fields say what is wrong with each.
      top.current?.scrollIntoView({ block: 'start', behavior: 'smooth' });
      return;
    }
    const data = fieldsOf(current);
    await saving.run(async () => {
      if (!rid && !id) {
        const response = await api.createIn(`${paths.collection(bid, cid)}/records`, data);
        notify(`Record “${response.data.id}” created.`);
        onSaved(response.data, true);
        return;
      }
      const result = await putObject(api, paths.record(bid, cid, (rid ?? id)!), data, rid ? lastModified : null);
      if (result.status === 'error') throw result.error;
      if (result.status === 'saved') {
        setConflict(null);
        notify(rid ? 'Record saved.' : `Record “${result.object.id}” created.`);
        onSaved(result.object, !rid);
      } else if (!rid) setError(`A record with the id “${id}” already exists.`);
      else setConflict({ theirs: result.theirs, mine: { ...data, id: rid } });
    });
  }

  async function remove() {
    if (!rid || !record) return;
    const failed = await saving.run(async () => {
      await deleteObject(api, paths.record(bid, cid, rid), base ?? undefined);
      notify(`Record “${rid}” deleted.`);
      onDeleted();
    });
    if (!failed) return;
    setConfirmDelete(false);
    if (statusOf(failed) === 412) setError('The record changed since you opened it: reload it before deleting.');
  }

  return (
    <div class="record-editor" ref={top}>
      {showErrors && errors.length ? <SchemaErrorSummary errors={errors} /> : null}
      {hasSchema ? (
        <EditorModeSwitch mode={mode} onChange={switchMode} />
      ) : (
        <p class="muted small">This collection has no JSON schema: records are free-form JSON.</p>
      )}

      {mode === 'form' && hasSchema ? (
        <>
          {!rid ? (
            <Field label="Id" hint="Optional: leave empty and the server picks one.">
              <input value={newId} onInput={(event) => setNewId(event.currentTarget.value)} spellcheck={false} />
            </Field>
          ) : null}
          <SchemaForm
            schema={schema!}
            value={draft}
            onChange={setDraft}
            errors={showErrors ? errors : []}
            readOnly={readonly}
          />
        </>
      ) : (
        <JsonEditor
          label="Record JSON"
          value={text}
          onChange={setText}
          onSave={() => void save()}
          readOnly={readonly}
          rows={20}
        />
      )}

      <EditActions
        saving={saving}
        errorTitle="Not saved"
        sticky
        dirty={dirty}
        invalid={(mode === 'json' && Boolean(parsed.error)) || (needsValidation && !validator)}
        saveLabel={rid ? 'Save' : 'Create record'}
        onSave={() => void save()}
        onUndo={rid ? undo : undefined}
      >
        {rid && !readonly ? (
          <DeleteButton label="Delete" disabled={busy} onClick={() => setConfirmDelete(true)} />
        ) : null}
      </EditActions>

      <SaveConflictDialog
        noun="record"
        conflict={conflict}
        onClose={() => setConflict(null)}
        onTheirs={(theirs) => (theirs ? onSaved(theirs, false) : onDeleted())}
        onRebase={setBase}
        onOverwrite={(lastModified) => void save(lastModified)}
      />
      {confirmDelete ? (
        <ConfirmDialog
          title={`Delete record “${rid}”?`}
          confirmLabel="Delete record"
          danger
          busy={busy}
          onConfirm={() => void remove()}
          onClose={() => setConfirmDelete(false)}
        >
          <p>Clients that sync this collection will receive its deletion. This cannot be undone.</p>
        </ConfirmDialog>
      ) : null}
    </div>
  );
}

/** Why nothing was sent: each field the collection's schema refuses. */
function SchemaErrorSummary({ errors }: { errors: SchemaError[] }) {
  return (
    <div class="notice error" role="alert">
      <div>
        <strong>Not valid for this collection: nothing was sent</strong>
        <ul class="error-list">
          {errors.map((item) => (
            <li key={item.path}>
              <Code>{readablePath(item.path)}</Code> {item.message}
            </li>
          ))}
        </ul>
      </div>
    </div>
  );
}

function EditorModeSwitch({ mode, onChange }: { mode: EditorMode; onChange: (mode: EditorMode) => void }) {
  return (
    <div class="segmented" role="radiogroup" aria-label="Editor">
      {(['form', 'json'] as const).map((candidate) => (
        <label key={candidate} class={candidate === mode ? 'segment active' : 'segment'}>
          <input type="radio" name="editor-mode" checked={candidate === mode} onChange={() => onChange(candidate)} />
          {candidate === 'form' ? 'Form' : 'JSON'}
        </label>
      ))}
    </div>
  );
}
