/**
 * One record's editor: the form the collection's schema generates or JSON, checked in the
 * browser with the server's rules before it is sent; saved with If-Match, so a change made
 * meanwhile by someone else opens the conflict dialog instead of being lost.
 */
import { useEffect, useMemo, useRef, useState } from 'preact/hooks';
import type { KintoObject } from '@quire/client/admin';
import { type AdminRemote, statusOf } from '../lib/remote.js';
import { type Saving, useSaving, useValidator } from '../lib/hooks.js';
import { deleteObject, paths, putObject } from '../lib/objects.js';
import { isActiveSchema, type JsonSchema, readablePath, type SchemaError } from '../lib/schema.js';
import { type SaveConflict, SaveConflictDialog } from './ConflictDialog.js';
import { DeleteButton, EditActions } from './EditActions.js';
import { useCapabilities, useConsole } from './context.js';
import { JsonEditor, parseJson } from './JsonEditor.js';
import { SchemaForm } from './SchemaForm.js';
import { Code, ConfirmDialog, Field } from './ui.js';

const SERVER_FIELDS = ['id', 'last_modified', 'schema'];

type EditorMode = 'form' | 'json';

function fieldsOf(record: Record<string, unknown>): Record<string, unknown> {
  return Object.fromEntries(Object.entries(record).filter(([key]) => !SERVER_FIELDS.includes(key)));
}

interface RecordEditorProps {
  bid: string;
  cid: string;
  /** null: a new record. */
  rid: string | null;
  schema: JsonSchema | null;
  bucketSchema: JsonSchema | null;
  record: KintoObject | null;
  onSaved: (record: KintoObject, created: boolean) => void;
  onDeleted: () => void;
}

export function RecordEditor({ bid, cid, rid, schema, bucketSchema, record, onSaved, onDeleted }: RecordEditorProps) {
  const { api, notify } = useConsole();
  const { readonly } = useCapabilities();
  const hasSchema = isActiveSchema(schema);
  const [showErrors, setShowErrors] = useState(false);
  const saving = useSaving();
  const { setError } = saving;
  const [conflict, setConflict] = useState<SaveConflict | null>(null);
  const top = useRef<HTMLDivElement>(null);
  const edit = useRecordDraft(record, rid, hasSchema, setError);
  const { mode, parsed, current, id, base, setBase } = edit;

  const { errors, needsValidation, validator } = useSchemaErrors(current, schema, bucketSchema, id);

  function undo() {
    edit.reset();
    setShowErrors(false);
    setError(null);
  }

  async function save(lastModified: number | null | undefined = base) {
    if (!current) return setError('The record must be a JSON object.');
    setShowErrors(true);
    // Nothing is sent while invalid: the summary at the top says why, the fields what is wrong with each.
    if (errors.length) return top.current?.scrollIntoView({ block: 'start', behavior: 'smooth' });
    const data = fieldsOf(current);
    await saving.run(async () => {
      const result = await sendRecord(api, { bid, cid, rid, id }, data, rid ? lastModified : null);
      if (result.status === 'error') throw result.error;
      if (result.status === 'saved') {
        setConflict(null);
        notify(rid ? 'Record saved.' : `Record “${result.object.id}” created.`);
        onSaved(result.object, !rid);
      } else if (!rid) setError(`A record with the id “${id}” already exists.`);
      else setConflict({ theirs: result.theirs, mine: { ...data, id: rid } });
    });
  }

  return (
    <div class="record-editor" ref={top}>
      {showErrors && errors.length ? <SchemaErrorSummary errors={errors} /> : null}
      <RecordFields
        edit={edit}
        schema={hasSchema ? schema : null}
        errors={showErrors ? errors : []}
        onSave={() => void save()}
      />
      <EditActions
        saving={saving}
        errorTitle="Not saved"
        sticky
        dirty={edit.dirty}
        invalid={(mode === 'json' && Boolean(parsed.error)) || (needsValidation && !validator)}
        saveLabel={rid ? 'Save' : 'Create record'}
        onSave={() => void save()}
        onUndo={rid ? undo : undefined}
      >
        {rid && record && !readonly ? (
          <RecordDeletion
            path={paths.record(bid, cid, rid)}
            rid={rid}
            base={base}
            saving={saving}
            onDeleted={onDeleted}
          />
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
    </div>
  );
}

/** The record being edited, as a form's value or as JSON text, and what it would send. */
function useRecordDraft(
  record: KintoObject | null,
  rid: string | null,
  hasSchema: boolean,
  setError: (error: string | null) => void,
) {
  const [mode, setMode] = useState<EditorMode>(hasSchema ? 'form' : 'json');
  const [draft, setDraft] = useState<Record<string, unknown>>(() => fieldsOf(record ?? {}));
  const [text, setText] = useState(() => JSON.stringify(fieldsOf(record ?? {}), null, 2));
  const [newId, setNewId] = useState('');
  // The version the edits apply to (If-Match).
  const [base, setBase] = useState<number | null>(record?.last_modified ?? null);
  const reset = () => {
    setDraft(fieldsOf(record ?? {}));
    setText(JSON.stringify(fieldsOf(record ?? {}), null, 2));
  };
  useEffect(() => {
    if (!record) return;
    reset();
    setBase(record.last_modified);
  }, [record]);

  // The record as it would be sent, from whichever editor is open.
  const parsed = mode === 'json' ? parseJson(text) : { value: draft };
  const current =
    parsed.value && typeof parsed.value === 'object' && !Array.isArray(parsed.value)
      ? (parsed.value as Record<string, unknown>)
      : null;
  const id = rid ?? (mode === 'json' && typeof current?.id === 'string' ? current.id : newId.trim() || undefined);
  const original = JSON.stringify(fieldsOf(record ?? {}));
  const dirty = !record || (current ? JSON.stringify(fieldsOf(current)) !== original : true);

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

  const state = { mode, draft, setDraft, text, setText, newId, setNewId, base, setBase };
  return { ...state, rid, parsed, current, id, dirty, reset, switchMode };
}

/** What the collection's schema and the bucket's refuse in `current` (once the validator is loaded). */
function useSchemaErrors(
  current: Record<string, unknown> | null,
  schema: JsonSchema | null,
  bucketSchema: JsonSchema | null,
  id: string | undefined,
) {
  const hasSchema = isActiveSchema(schema);
  const needsValidation = hasSchema || isActiveSchema(bucketSchema);
  const validator = useValidator(needsValidation);
  const errors: SchemaError[] = useMemo(() => {
    if (!current || !validator) return [];
    return [
      ...(hasSchema ? validator.validateRecord(current, schema!, id) : []),
      ...(isActiveSchema(bucketSchema) ? validator.validateRecord(current, bucketSchema, id) : []),
    ];
  }, [current, schema, bucketSchema, hasSchema, id, validator]);
  return { errors, needsValidation, validator };
}

/** The record's fields: the form its schema generates (with an id for a new record), or JSON. */
function RecordFields({
  edit,
  schema,
  errors,
  onSave,
}: {
  edit: ReturnType<typeof useRecordDraft>;
  /** The collection's schema, when it has one. */
  schema: JsonSchema | null;
  errors: SchemaError[];
  onSave: () => void;
}) {
  const { readonly } = useCapabilities();
  const modes = schema ? (
    <EditorModeSwitch mode={edit.mode} onChange={edit.switchMode} />
  ) : (
    <p class="muted small">This collection has no JSON schema: records are free-form JSON.</p>
  );
  if (edit.mode === 'json' || !schema)
    return (
      <>
        {modes}
        <JsonEditor
          label="Record JSON"
          value={edit.text}
          onChange={edit.setText}
          onSave={onSave}
          readOnly={readonly}
          rows={20}
        />
      </>
    );
  return (
    <>
      {modes}
      {!edit.rid ? (
        <Field label="Id" hint="Optional: leave empty and the server picks one.">
          <input value={edit.newId} onInput={(event) => edit.setNewId(event.currentTarget.value)} spellcheck={false} />
        </Field>
      ) : null}
      <SchemaForm schema={schema} value={edit.draft} onChange={edit.setDraft} errors={errors} readOnly={readonly} />
    </>
  );
}

/** Creates the record (the server picks its id when it has none) or writes it by id. */
function sendRecord(
  api: AdminRemote,
  where: { bid: string; cid: string; rid: string | null; id: string | undefined },
  data: Record<string, unknown>,
  lastModified: number | null | undefined,
): ReturnType<typeof putObject<KintoObject>> {
  const { bid, cid, rid, id } = where;
  if (!rid && !id)
    return api
      .createIn(`${paths.collection(bid, cid)}/records`, data)
      .then((response) => ({ status: 'saved', object: response.data, permissions: response.permissions ?? {} }));
  return putObject(api, paths.record(bid, cid, (rid ?? id)!), data, lastModified);
}

/** The delete button and its confirmation; a failure shows where the editor's errors do. */
function RecordDeletion({
  path,
  rid,
  base,
  saving,
  onDeleted,
}: {
  path: string;
  rid: string;
  /** The version being edited: deleting another one answers 412. */
  base: number | null;
  saving: Saving;
  onDeleted: () => void;
}) {
  const { api, notify } = useConsole();
  const [confirm, setConfirm] = useState(false);
  async function remove() {
    const failed = await saving.run(async () => {
      await deleteObject(api, path, base ?? undefined);
      notify(`Record “${rid}” deleted.`);
      onDeleted();
    });
    if (!failed) return;
    setConfirm(false);
    if (statusOf(failed) === 412) saving.setError('The record changed since you opened it: reload it before deleting.');
  }
  return (
    <>
      <DeleteButton label="Delete" disabled={saving.busy} onClick={() => setConfirm(true)} />
      {confirm ? (
        <DeleteRecordDialog
          rid={rid}
          busy={saving.busy}
          onConfirm={() => void remove()}
          onClose={() => setConfirm(false)}
        />
      ) : null}
    </>
  );
}

function DeleteRecordDialog({
  rid,
  busy,
  onConfirm,
  onClose,
}: {
  rid: string | null;
  busy: boolean;
  onConfirm: () => void;
  onClose: () => void;
}) {
  return (
    <ConfirmDialog
      title={`Delete record “${rid}”?`}
      confirmLabel="Delete record"
      danger
      busy={busy}
      onConfirm={onConfirm}
      onClose={onClose}
    >
      <p>Clients that sync this collection will receive its deletion. This cannot be undone.</p>
    </ConfirmDialog>
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
