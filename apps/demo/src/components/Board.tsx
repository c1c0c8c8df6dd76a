/** One list: its tasks (add, edit, tick, reorder, delete), its conflicts, and the owner's actions. */
import type { Collection, ManualResolution } from '@quire/client';
import { useMemo, useState } from 'preact/hooks';
import { describeError } from '../errors.js';
import { useConflicts, useRecords } from '@quire/react';
import { useAction } from '../hooks.js';
import { addItem } from '../items.js';
import { deleteList, renameList } from '../lists.js';
import { canEdit, type Item, type ListRecord } from '../model.js';
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

type Mode = 'view' | 'rename' | 'confirm-delete' | 'share';
type Run = ReturnType<typeof useAction>['run'];

export function Board({ workspace, entry, online, onDeleted }: Props) {
  const { items, records, conflicts, sorted, orphanConflicts } = useBoardData(workspace, entry);
  const editable = canEdit(entry.role);
  const [newTitle, setNewTitle] = useState('');
  const [mode, setMode] = useState<Mode>('view');
  const [renameTo, setRenameTo] = useState(entry.title);
  const { busy, error, run } = useAction(describeError);

  const resolve = (id: string, resolution: ManualResolution) =>
    run(async () => {
      await items.resolve(id, resolution);
      workspace.status.refresh();
      // Publish the choice now rather than at the next interval.
      if (online && !workspace.isLocal) await items.sync();
    });

  return (
    <section class="board" aria-labelledby="board-title">
      <BoardHeader
        {...{ workspace, entry, online, mode, setMode, renameTo, setRenameTo, run }}
        subtitle={subtitleOf(workspace, entry, editable)}
      />
      {mode === 'confirm-delete' && (
        <ConfirmDelete {...{ workspace, entry, busy, run, onDeleted }} count={sorted.length} setMode={setMode} />
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
      {editable && <AddItemForm items={items} newTitle={newTitle} setNewTitle={setNewTitle} run={run} />}
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

/** The list's tasks in order, its conflicts by task, and the conflicts whose task is gone. */
function useBoardData(workspace: Workspace, entry: ListRecord) {
  const items = useMemo(() => workspace.items(entry), [workspace, entry.bucket, entry.collection]);
  const records = useRecords(items);
  const conflictList = useConflicts(items);
  const conflicts = useMemo(() => new Map(conflictList.map((conflict) => [conflict.id, conflict])), [conflictList]);
  const sorted = useMemo(() => byPosition(records ?? []), [records]);
  // Conflicts on tasks deleted here (no row to show them in).
  const shown = new Set(sorted.map((item) => item.id));
  const orphanConflicts = [...conflicts.values()].filter((conflict) => !shown.has(conflict.id));
  return { items, records, conflicts, sorted, orphanConflicts };
}

function subtitleOf(workspace: Workspace, entry: ListRecord, editable: boolean): string {
  if (entry.role === 'owner') return workspace.isLocal ? 'On this device only' : 'Your list';
  return `Shared by ${entry.owner} · ${editable ? 'you can edit' : 'view only'}`;
}

interface HeaderProps {
  workspace: Workspace;
  entry: ListRecord;
  online: boolean;
  subtitle: string;
  mode: Mode;
  setMode: (mode: Mode) => void;
  renameTo: string;
  setRenameTo: (title: string) => void;
  run: Run;
}

function BoardHeader({ workspace, entry, online, subtitle, mode, setMode, renameTo, setRenameTo, run }: HeaderProps) {
  return (
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
      {entry.role === 'owner' && mode === 'view' && (
        <OwnerActions {...{ workspace, online, setMode }} onRename={() => setRenameTo(entry.title)} />
      )}
    </header>
  );
}

interface OwnerActionsProps {
  workspace: Workspace;
  online: boolean;
  setMode: (mode: Mode) => void;
  onRename: () => void;
}

function OwnerActions({ workspace, online, setMode, onRename }: OwnerActionsProps) {
  return (
    <div class="board-actions">
      <button
        type="button"
        class="secondary"
        onClick={() => {
          onRename();
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
  );
}

interface ConfirmDeleteProps {
  workspace: Workspace;
  entry: ListRecord;
  count: number;
  busy: boolean;
  run: Run;
  setMode: (mode: Mode) => void;
  onDeleted: () => void;
}

function ConfirmDelete({ workspace, entry, count, busy, run, setMode, onDeleted }: ConfirmDeleteProps) {
  return (
    <div class="confirm" role="alertdialog" aria-labelledby="confirm-delete-text">
      <p id="confirm-delete-text">
        Delete “{entry.title}” and its {count} tasks
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
  );
}

interface AddItemFormProps {
  items: Collection<Item>;
  newTitle: string;
  setNewTitle: (update: string | ((typed: string) => string)) => void;
  run: Run;
}

function AddItemForm({ items, newTitle, setNewTitle, run }: AddItemFormProps) {
  return (
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
  );
}
