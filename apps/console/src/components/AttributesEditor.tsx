/**
 * The JSON attributes of a bucket, collection or group: edit and save (If-Match, with the
 * conflict dialog on 412), or delete with everything below it.
 */
import type { ComponentChildren } from 'preact';
import { useEffect, useState } from 'preact/hooks';
import type { KintoObject } from '@quire/client/admin';
import { formatTimestamp } from '../lib/format.js';
import { useSaving } from '../lib/hooks.js';
import { deleteObject, editableFields, putObject } from '../lib/objects.js';
import { type SaveConflict, SaveConflictDialog } from './ConflictDialog.js';
import { DeleteButton, EditActions } from './EditActions.js';
import { useCapabilities, useConsole } from './context.js';
import { JsonEditor, parseJson } from './JsonEditor.js';
import { ConfirmDialog } from './ui.js';

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
  const [conflict, setConflict] = useState<SaveConflict | null>(null);
  const saving = useSaving();
  const [confirmDelete, setConfirmDelete] = useState(false);

  useEffect(() => {
    setText(pretty(object));
    setBase(object.last_modified);
  }, [object]);

  const parsed = parseJson(text);
  const dirty = text !== pretty(object);
  const capitalised = `${noun[0]!.toUpperCase()}${noun.slice(1)}`;

  async function save(lastModified: number | null | undefined = base) {
    const value = parsed.value;
    if (parsed.error || !value || typeof value !== 'object' || Array.isArray(value)) {
      saving.setError('The attributes must be a JSON object.');
      return;
    }
    const data = { ...(value as Record<string, unknown>), id: object.id };
    await saving.run(async () => {
      const result = await putObject(api, path, data, lastModified);
      if (result.status === 'error') throw result.error;
      if (result.status === 'conflict') return setConflict({ theirs: result.theirs, mine: data });
      setConflict(null);
      notify(`${capitalised} saved.`);
      onSaved(result.object);
    });
  }

  async function remove() {
    const failed = await saving.run(async () => {
      await deleteObject(api, path, object.last_modified);
      notify(`${capitalised} “${object.id}” deleted.`);
      onDeleted();
    });
    if (failed) setConfirmDelete(false);
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
      <EditActions
        saving={saving}
        dirty={dirty}
        invalid={Boolean(parsed.error)}
        onSave={() => void save()}
        onUndo={() => setText(pretty(object))}
      >
        <span class="muted small">
          Version {object.last_modified} · {formatTimestamp(object.last_modified)}
        </span>
        {!readonly ? <DeleteButton label={`Delete ${noun}`} onClick={() => setConfirmDelete(true)} /> : null}
      </EditActions>
      <SaveConflictDialog
        noun={noun}
        conflict={conflict}
        onClose={() => setConflict(null)}
        onTheirs={(theirs) => (theirs ? onSaved(theirs) : onDeleted())}
        onRebase={setBase}
        onOverwrite={(lastModified) => void save(lastModified)}
      />
      {confirmDelete ? (
        <ConfirmDialog
          title={`Delete ${noun} “${object.id}”?`}
          confirmLabel={`Delete ${noun}`}
          danger
          busy={saving.busy}
          onConfirm={() => void remove()}
          onClose={() => setConfirmDelete(false)}
        >
          {deleteWarning}
        </ConfirmDialog>
      ) : null}
    </section>
  );
}
