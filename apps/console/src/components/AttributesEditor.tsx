/**
 * The JSON attributes of a bucket, collection or group: edit and save (If-Match, with the
 * conflict dialog on 412), or delete with everything below it.
 */
import type { ComponentChildren } from 'preact';
import { useEffect, useState } from 'preact/hooks';
import type { KintoObject } from '@quire/client/admin';
import { formatTimestamp } from '../lib/format.js';
import { deleteObject, editableFields } from '../lib/objects.js';
import { useObjectSave } from './ConflictDialog.js';
import { DeleteButton, EditActions } from './EditActions.js';
import { useCapabilities, useConsole } from './context.js';
import { JsonEditor, parseJson } from './JsonEditor.js';
import { ConfirmDialog } from './ui.js';

const pretty = (object: KintoObject) => {
  const { id: _id, ...rest } = editableFields(object);
  return JSON.stringify(rest, null, 2);
};

interface AttributesEditorProps {
  noun: string;
  path: string;
  object: KintoObject;
  onSaved: (object: KintoObject) => void;
  onDeleted: () => void;
  deleteWarning: ComponentChildren;
  help?: ComponentChildren;
}

export function AttributesEditor({
  noun,
  path,
  object,
  onSaved,
  onDeleted,
  deleteWarning,
  help,
}: AttributesEditorProps) {
  const { api, notify } = useConsole();
  const { readonly } = useCapabilities();
  const [text, setText] = useState(() => pretty(object));
  const [confirmDelete, setConfirmDelete] = useState(false);
  const capitalised = `${noun[0]!.toUpperCase()}${noun.slice(1)}`;
  const { saving, save: put, conflictDialog } = useObjectSave(path, object, `${capitalised} saved.`, onSaved);

  useEffect(() => setText(pretty(object)), [object]);

  const parsed = parseJson(text);
  const dirty = text !== pretty(object);

  async function save() {
    const value = parsed.value;
    if (parsed.error || !value || typeof value !== 'object' || Array.isArray(value)) {
      saving.setError('The attributes must be a JSON object.');
      return;
    }
    await put({ ...(value as Record<string, unknown>), id: object.id });
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
      {conflictDialog(noun, onDeleted)}
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
