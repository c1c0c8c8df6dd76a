/** Creating a bucket, collection or group: an id (or one the server picks) and optional JSON attributes. */
import { useState } from 'preact/hooks';
import type { KintoObject } from '@quire/client/admin';
import { explain, statusOf } from '../lib/remote.js';
import { useConsole } from './context.js';
import { Dialog, Field, FormError, onSubmit } from './ui.js';

const ID = /^[a-zA-Z0-9][a-zA-Z0-9_-]*$/;

export function CreateDialog({
  noun,
  parentPath,
  plural,
  idRequired,
  onClose,
  onCreated,
}: {
  noun: string;
  /** e.g. `/buckets/b` ('' for buckets) */
  parentPath: string;
  /** e.g. `collections` */
  plural: string;
  idRequired?: boolean;
  onClose: () => void;
  onCreated: (object: KintoObject) => void;
}) {
  const { api, notify } = useConsole();
  const [id, setId] = useState('');
  const [attributes, setAttributes] = useState('{}');
  const [error, setError] = useState<string | null>(null);
  const [busy, setBusy] = useState(false);
  const idError = id && !ID.test(id) ? 'Letters, digits, “_” and “-” only, not starting with “_” or “-”.' : null;

  async function create() {
    let data: Record<string, unknown>;
    try {
      data = JSON.parse(attributes || '{}') as Record<string, unknown>;
      if (!data || typeof data !== 'object' || Array.isArray(data))
        throw new Error('Attributes must be a JSON object.');
    } catch (caught) {
      setError(`Attributes: ${(caught as Error).message}`);
      return;
    }
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
        <Field
          label="Attributes (JSON)"
          hint={
            noun === 'collection'
              ? 'e.g. {"schema": {…}, "displayFields": ["title"]}'
              : noun === 'group'
                ? 'e.g. {"members": ["account:alice"]}'
                : undefined
          }
        >
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
