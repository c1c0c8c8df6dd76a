/**
 * The JSON attributes of a bucket, collection or group: edit and save (If-Match, with the
 * conflict dialog on 412), or delete with everything below it.
 */
import type { ComponentChildren } from 'preact';
import { useEffect, useState } from 'preact/hooks';
import type { KintoObject } from '@quire/client/admin';
import { formatTimestamp } from '../lib/format.js';
import { deleteObject, editableFields, putObject } from '../lib/objects.js';
import { ConflictDialog } from './ConflictDialog.js';
import { useCapabilities, useConsole } from './context.js';
import { JsonEditor, parseJson } from './JsonEditor.js';
import { ConfirmDialog, ErrorNotice } from './ui.js';

const pretty = (object: KintoObject) => {
  const { id: _id, ...rest } = editableFields(object);
  return JSON.stringify(rest, null, 2);
};

export function AttributesEditor({
  noun,
  path,
  object,
  onSaved,
  onDeleted,
  deleteWarning,
  help,
}: {
  noun: string;
  path: string;
  object: KintoObject;
  onSaved: (object: KintoObject) => void;
  onDeleted: () => void;
  deleteWarning: ComponentChildren;
  help?: ComponentChildren;
}) {
  const { api, notify } = useConsole();
  const { readonly } = useCapabilities();
  const [text, setText] = useState(() => pretty(object));
  const [base, setBase] = useState(object.last_modified);
  const [conflict, setConflict] = useState<{ theirs: KintoObject | null; mine: Record<string, unknown> } | null>(null);
  const [error, setError] = useState<Error | string | null>(null);
  const [busy, setBusy] = useState(false);
  const [confirmDelete, setConfirmDelete] = useState(false);

  useEffect(() => {
    setText(pretty(object));
    setBase(object.last_modified);
  }, [object]);

  const parsed = parseJson(text);
  const dirty = text !== pretty(object);

  async function save(lastModified: number | null | undefined = base) {
    const value = parsed.value;
    if (parsed.error || !value || typeof value !== 'object' || Array.isArray(value)) {
      setError('The attributes must be a JSON object.');
      return;
    }
    setBusy(true);
    setError(null);
    const data = { ...(value as Record<string, unknown>), id: object.id };
    const result = await putObject(api, path, data, lastModified);
    setBusy(false);
    if (result.status === 'saved') {
      setConflict(null);
      notify(`${noun[0]!.toUpperCase()}${noun.slice(1)} saved.`);
      onSaved(result.object);
    } else if (result.status === 'conflict') setConflict({ theirs: result.theirs, mine: data });
    else setError(result.error);
  }

  async function remove() {
    setBusy(true);
    try {
      await deleteObject(api, path, object.last_modified);
      notify(`${noun[0]!.toUpperCase()}${noun.slice(1)} “${object.id}” deleted.`);
      onDeleted();
    } catch (caught) {
      setError(caught as Error);
      setConfirmDelete(false);
    } finally {
      setBusy(false);
    }
  }

  return (
    <section class="attributes" aria-label="Attributes">
      {help ? <div class="muted small help">{help}</div> : null}
      <JsonEditor
        label={`${noun} attributes`}
        value={text}
        onChange={setText}
        onSave={() => void save()}
        readOnly={readonly}
        rows={24}
      />
      {error ? <ErrorNotice error={error} /> : null}
      <div class="form-actions">
        {!readonly ? (
          <>
            <button
              type="button"
              class="button"
              disabled={!dirty || busy || Boolean(parsed.error)}
              onClick={() => void save()}
            >
              {busy ? 'Saving…' : 'Save'}
            </button>
            <button
              type="button"
              class="button secondary"
              disabled={!dirty || busy}
              onClick={() => setText(pretty(object))}
            >
              Undo changes
            </button>
          </>
        ) : null}
        <span class="muted small">
          Version {object.last_modified} · {formatTimestamp(object.last_modified)}
        </span>
        <span class="toolbar-spacer" />
        {!readonly ? (
          <button type="button" class="button danger-outline" onClick={() => setConfirmDelete(true)}>
            Delete {noun}
          </button>
        ) : null}
      </div>
      {conflict ? (
        <ConflictDialog
          noun={noun}
          mine={conflict.mine}
          theirs={conflict.theirs}
          onClose={() => setConflict(null)}
          onTakeTheirs={() => {
            setConflict(null);
            if (conflict.theirs) onSaved(conflict.theirs);
            else onDeleted();
          }}
          onEditOnTop={() => {
            if (conflict.theirs) setBase(conflict.theirs.last_modified);
            setConflict(null);
          }}
          onOverwrite={() => void save(conflict.theirs ? conflict.theirs.last_modified : null)}
        />
      ) : null}
      {confirmDelete ? (
        <ConfirmDialog
          title={`Delete ${noun} “${object.id}”?`}
          confirmLabel={`Delete ${noun}`}
          danger
          busy={busy}
          onConfirm={() => void remove()}
          onClose={() => setConfirmDelete(false)}
        >
          {deleteWarning}
        </ConfirmDialog>
      ) : null}
    </section>
  );
}
