/** Creating a bucket, collection or group: an id (or one the server picks) and optional JSON attributes. */
import { useState } from 'preact/hooks';
import type { KintoObject } from '@quire/client/admin';
import { explain, statusOf } from '../lib/remote.js';
import { useConsole } from './context.js';
import { Dialog, Field, FormError, onSubmit } from './ui.js';

const ID = /^[a-zA-Z0-9][a-zA-Z0-9_-]*$/;

/** Examples of the attributes of each kind of object that has typical ones. */
const ATTRIBUTES_HINT: Record<string, string | undefined> = {
  collection: 'e.g. {"schema": {…}, "displayFields": ["title"]}',
  group: 'e.g. {"members": ["account:alice"]}',
};

/** The typed attributes as an object, or what is wrong with them. */
function parseAttributes(text: string): Record<string, unknown> | string {
  try {
    const data = JSON.parse(text || '{}') as Record<string, unknown>;
    if (!data || typeof data !== 'object' || Array.isArray(data)) throw new Error('Attributes must be a JSON object.');
    return data;
  } catch (caught) {
    return `Attributes: ${(caught as Error).message}`;
  }
}

interface CreateDialogProps {
  noun: string;
  /** e.g. `/buckets/b` ('' for buckets) */
  parentPath: string;
  /** e.g. `collections` */
  plural: string;
  idRequired?: boolean;
  onClose: () => void;
  onCreated: (object: KintoObject) => void;
}

export function CreateDialog({ noun, parentPath, plural, idRequired, onClose, onCreated }: CreateDialogProps) {
  const { api, notify } = useConsole();
  const [id, setId] = useState('');
  const [attributes, setAttributes] = useState('{}');
  const [error, setError] = useState<string | null>(null);
  const [busy, setBusy] = useState(false);
  const idError = id && !ID.test(id) ? 'Letters, digits, “_” and “-” only, not starting with “_” or “-”.' : null;

  async function create() {
    const data = parseAttributes(attributes);
    if (typeof data === 'string') return setError(data);
    setBusy(true);
    setError(null);
    try {
      const response = id
        ? await api.putObject(`${parentPath}/${plural}/${encodeURIComponent(id)}`, data, { ifNoneMatch: true })
        : await api.createIn(`${parentPath}/${plural}`, data);
      notify(`${noun[0]!.toUpperCase()}${noun.slice(1)} “${response.data.id}” created.`);
      onCreated(response.data);
    } catch (caught) {
      if (statusOf(caught) === 412) setError(`A ${noun} with the id “${id}” already exists.`);
      else setError(explain(caught));
      setBusy(false);
    }
  }

  return (
    <Dialog
      title={`New ${noun}`}
      onClose={onClose}
      footer={
        <>
          <button type="button" class="button secondary" onClick={onClose}>
            Cancel
          </button>
          <button
            type="submit"
            form="create-form"
            class="button"
            disabled={busy || Boolean(idError) || (idRequired && !id)}
          >
            {busy ? 'Creating…' : `Create ${noun}`}
          </button>
        </>
      }
    >
      <form id="create-form" class="form" onSubmit={onSubmit(() => void create())}>
        <Field label="Id" error={idError} hint={idRequired ? undefined : 'Leave empty and the server picks one.'}>
          <input
            value={id}
            onInput={(event) => setId(event.currentTarget.value.trim())}
            spellcheck={false}
            required={idRequired}
          />
        </Field>
        <Field label="Attributes (JSON)" hint={ATTRIBUTES_HINT[noun]}>
          <textarea
            class="code-input"
            rows={5}
            value={attributes}
            onInput={(event) => setAttributes(event.currentTarget.value)}
            spellcheck={false}
          />
        </Field>
        <FormError error={error} />
      </form>
    </Dialog>
  );
}
