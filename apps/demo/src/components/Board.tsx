/** One list: its tasks (add, edit, tick, reorder, delete), its conflicts, and the owner's actions. */
import type { ManualResolution } from '@quire/client';
import { useMemo, useState } from 'preact/hooks';
import { describeError } from '../errors.js';
import { useConflicts, useRecords } from '@quire/react';
import { useAction } from '../hooks.js';
import { addItem } from '../items.js';
import { deleteList, renameList } from '../lists.js';
import { canEdit, type ListRecord } from '../model.js';
import { byPosition } from '../order.js';
import type { Workspace } from '../workspace.js';
import { ConflictPanel } from './ConflictPanel.js';
import { ItemRow } from './ItemRow.js';
import { ShareDialog } from './ShareDialog.js';

interface Props {
  workspace: Workspace;
  entry: ListRecord;
  online: boolean;
  onDeleted: () => void;
}

export function Board({ workspace, entry, online, onDeleted }: Props) {
  const items = useMemo(() => workspace.items(entry), [workspace, entry.bucket, entry.collection]);
  const records = useRecords(items);
  const conflictList = useConflicts(items);
  const conflicts = useMemo(() => new Map(conflictList.map((conflict) => [conflict.id, conflict])), [conflictList]);
  const sorted = useMemo(() => byPosition(records ?? []), [records]);
  const editable = canEdit(entry.role);
  const isOwner = entry.role === 'owner';
  const [newTitle, setNewTitle] = useState('');
  const [mode, setMode] = useState<'view' | 'rename' | 'confirm-delete' | 'share'>('view');
  const [renameTo, setRenameTo] = useState(entry.title);
  const { busy, error, run } = useAction(describeError);

  const resolve = (id: string, resolution: ManualResolution) =>
    run(async () => {
      await items.resolve(id, resolution);
      workspace.status.refresh();
      // Publish the choice now rather than at the next interval.
      if (online && !workspace.isLocal) await items.sync();
    });
  // Conflicts on tasks deleted here (no row to show them in).
  const shown = new Set(sorted.map((item) => item.id));
  const orphanConflicts = [...conflicts.values()].filter((conflict) => !shown.has(conflict.id));

  const subtitle = isOwner
    ? workspace.isLocal
      ? 'On this device only'
      : 'Your list'
    : `Shared by ${entry.owner} · ${editable ? 'you can edit' : 'view only'}`;

  return (
    <section class="board" aria-labelledby="board-title">
      <header class="board-header">
        {mode === 'rename' ? (
          <form
            class="inline rename"
            onSubmit={(event) => {
              event.preventDefault();
              void run(async () => {
                await renameList(workspace, entry, renameTo);
                setMode('view');
              });
            }}
          >
            <label for="rename-list" class="visually-hidden">
              List name
            </label>
            <input id="rename-list" value={renameTo} onInput={(event) => setRenameTo(event.currentTarget.value)} />
            <button type="submit">Save name</button>
            <button type="button" class="secondary" onClick={() => setMode('view')}>
              Cancel
            </button>
          </form>
        ) : (
          <div>
            <h2 id="board-title">{entry.title}</h2>
            <p class="muted">{subtitle}</p>
          </div>
        )}
        {isOwner && mode === 'view' && (
          <div class="board-actions">
            <button
              type="button"
              class="secondary"
              onClick={() => {
                setRenameTo(entry.title);
                setMode('rename');
              }}
            >
              Rename
            </button>
            {!workspace.isLocal && (
              <button
                type="button"
                onClick={() => setMode('share')}
                disabled={!online}
                title={online ? undefined : 'Sharing needs a connection'}
              >
                Share…
              </button>
            )}
            <button type="button" class="danger" onClick={() => setMode('confirm-delete')}>
              Delete list
            </button>
          </div>
        )}
      </header>

      {mode === 'confirm-delete' && (
        <div class="confirm" role="alertdialog" aria-labelledby="confirm-delete-text">
          <p id="confirm-delete-text">
            Delete “{entry.title}” and its {sorted.length} tasks
            {workspace.isLocal ? '' : ', also for everyone it is shared with'}?
          </p>
          <div class="buttons">
            <button
              type="button"
              class="danger"
              disabled={busy}
              onClick={() =>
                void run(async () => {
                  await deleteList(workspace, entry);
                  onDeleted();
                })
              }
            >
              Yes, delete the list
            </button>
            <button type="button" class="secondary" onClick={() => setMode('view')}>
              Keep it
            </button>
          </div>
        </div>
      )}

      {mode === 'share' && <ShareDialog workspace={workspace} entry={entry} onClose={() => setMode('view')} />}

      {!editable && (
        <p class="readonly" role="note">
          View only: {entry.owner} shared this list with you without the right to change it.
        </p>
      )}
      {error && (
        <p class="error" role="alert">
          {error}
        </p>
      )}

      {orphanConflicts.map((conflict) => (
        <ConflictPanel
          key={conflict.id}
          conflict={conflict}
          busy={busy}
          onResolve={(resolution) => void resolve(conflict.id, resolution)}
        />
      ))}

      {editable && (
        <form
          class="add-item inline"
          onSubmit={(event) => {
            event.preventDefault();
            // Clear the field at once so the next task can be typed while this one is stored;
            // give the text back if it could not be added (and nothing new was typed since).
            const title = newTitle;
            setNewTitle('');
            void run(async () => {
              try {
                await addItem(items, title);
              } catch (caught) {
                setNewTitle((typed) => (typed === '' ? title : typed));
                throw caught;
              }
            });
          }}
        >
          <label for="new-item" class="visually-hidden">
            New task
          </label>
          <input
            id="new-item"
            placeholder="Add a task…"
            value={newTitle}
            onInput={(event) => setNewTitle(event.currentTarget.value)}
          />
          <button type="submit">Add task</button>
        </form>
      )}

      {records === undefined ? (
        <p class="muted">Opening the list…</p>
      ) : sorted.length === 0 ? (
        <p class="muted">No tasks yet.</p>
      ) : (
        <ul class="items" aria-label={`Tasks in ${entry.title}`}>
          {sorted.map((item, index) => (
            <ItemRow
              key={item.id}
              items={items}
              sorted={sorted}
              index={index}
              editable={editable}
              conflict={conflicts.get(item.id)}
              busy={busy}
              onResolve={(resolution) => void resolve(item.id, resolution)}
              run={run}
            />
          ))}
        </ul>
      )}
    </section>
  );
}
