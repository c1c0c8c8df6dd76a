/** The user's lists and the lists shared with them, and the form creating a list. */
import { useState } from 'preact/hooks';
import { describeError } from '../errors.js';
import { useAction } from '../hooks.js';
import { createList } from '../lists.js';
import type { ListRecord } from '../model.js';
import type { Workspace } from '../workspace.js';

interface Props {
  workspace: Workspace;
  /** Sorted; undefined while the registry opens. */
  entries: ListRecord[] | undefined;
  selectedId: string | null;
  onCreated: (id: string) => void;
}

export function ListsPanel({ workspace, entries, selectedId, onCreated }: Props) {
  const [title, setTitle] = useState('');
  const { busy, error, run } = useAction(describeError);
  const own = entries?.filter((entry) => entry.role === 'owner') ?? [];
  const shared = entries?.filter((entry) => entry.role !== 'owner') ?? [];

  const link = (entry: ListRecord, detail?: string) => (
    <li key={entry.id}>
      <a href={`#/list/${entry.id}`} aria-current={entry.id === selectedId ? 'page' : undefined}>
        <span class="list-title">{entry.title}</span>
        {detail && <span class="list-detail">{detail}</span>}
      </a>
    </li>
  );

  return (
    <nav class="lists" aria-label="Lists">
      <h2 id="own-lists">My lists</h2>
      {entries !== undefined && own.length === 0 && <p class="muted">No lists yet.</p>}
      <ul aria-labelledby="own-lists">{own.map((entry) => link(entry))}</ul>

      <form
        class="new-list"
        onSubmit={(event) => {
          event.preventDefault();
          void run(async () => {
            const entry = await createList(workspace, title);
            setTitle('');
            onCreated(entry.id);
          });
        }}
      >
        <label for="new-list-title">New list</label>
        <input
          id="new-list-title"
          value={title}
          placeholder="e.g. Groceries"
          onInput={(event) => setTitle(event.currentTarget.value)}
        />
        <button type="submit" disabled={busy}>
          Create list
        </button>
        {error && (
          <p class="error" role="alert">
            {error}
          </p>
        )}
      </form>

      {!workspace.isLocal && (
        <>
          <h2 id="shared-lists">Shared with me</h2>
          {entries !== undefined && shared.length === 0 && (
            <p class="muted">Nothing yet. Lists others share with you appear here.</p>
          )}
          <ul aria-labelledby="shared-lists">
            {shared.map((entry) =>
              link(entry, `by ${entry.owner} · ${entry.role === 'write' ? 'can edit' : 'view only'}`),
            )}
          </ul>
        </>
      )}
    </nav>
  );
}
