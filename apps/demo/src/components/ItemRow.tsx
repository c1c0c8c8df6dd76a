/** One task: tick it, edit it in place, move it, delete it; its conflict panel when it has one. */
import type { Collection, ConflictEntry, ManualResolution } from '@quire/client';
import { useEffect, useState } from 'preact/hooks';
import { attachFile, removeFile, useTaskFile } from '../files.js';
import { deleteItem, type ItemRecord, moveItem, renameItem, setDone } from '../items.js';
import type { Item } from '../model.js';
import { ConflictPanel } from './ConflictPanel.js';

interface Props {
  items: Collection<Item>;
  sorted: ItemRecord[];
  index: number;
  editable: boolean;
  conflict: ConflictEntry | undefined;
  busy: boolean;
  onResolve: (resolution: ManualResolution) => void;
  /** Runs an edit, showing its error in the board. */
  run: (action: () => Promise<unknown>) => Promise<boolean>;
}

type Run = Props['run'];
type TaskFile = NonNullable<ReturnType<typeof useTaskFile>>;

export function ItemRow({ items, sorted, index, editable, conflict, busy, onResolve, run }: Props) {
  const item = sorted[index]!;
  const [editing, setEditing] = useState(false);
  const [text, setText] = useState(item.title);
  const { done, tick } = useTicked(items, item, run);
  const file = useTaskFile(items, item.id);

  return (
    <li class={`item${done ? ' done' : ''}${conflict ? ' has-conflict' : ''}`}>
      <div class="item-main">
        <input
          id={`done-${item.id}`}
          type="checkbox"
          checked={done}
          disabled={!editable}
          aria-label={`Done: ${item.title}`}
          onChange={(event) => tick(event.currentTarget.checked)}
        />
        {editing ? (
          <EditForm
            items={items}
            item={item}
            text={text}
            setText={setText}
            onClose={() => setEditing(false)}
            run={run}
          />
        ) : (
          <span class="item-title">{item.title}</span>
        )}
        {editable && !editing && (
          <ItemActions
            items={items}
            sorted={sorted}
            index={index}
            hasFile={Boolean(file)}
            onEdit={() => {
              setText(item.title);
              setEditing(true);
            }}
            run={run}
          />
        )}
      </div>
      {file && <ItemFile items={items} item={item} file={file} editable={editable} run={run} />}
      {conflict && <ConflictPanel conflict={conflict} busy={busy} onResolve={onResolve} />}
    </li>
  );
}

/** The box shows the click at once; the stored value follows when the local write lands. */
function useTicked(items: Collection<Item>, item: ItemRecord, run: Run) {
  const [ticked, setTicked] = useState<boolean | null>(null);
  useEffect(() => setTicked(null), [item.done]);
  const tick = (checked: boolean) => {
    setTicked(checked);
    void run(() => setDone(items, item.id, checked)).then((ok) => ok || setTicked(null));
  };
  return { done: ticked ?? item.done === 1, tick };
}

interface EditFormProps {
  items: Collection<Item>;
  item: ItemRecord;
  text: string;
  setText: (text: string) => void;
  onClose: () => void;
  run: Run;
}

function EditForm({ items, item, text, setText, onClose, run }: EditFormProps) {
  return (
    <form
      class="inline edit-item"
      onSubmit={(event) => {
        event.preventDefault();
        void run(async () => {
          await renameItem(items, item.id, text);
          onClose();
        });
      }}
    >
      <label for={`edit-${item.id}`} class="visually-hidden">
        Task text
      </label>
      <input
        id={`edit-${item.id}`}
        value={text}
        // biome-ignore lint/a11y/noAutofocus: the field replaces the text the user chose to edit: focus follows
        autoFocus
        onInput={(event) => setText(event.currentTarget.value)}
        onKeyDown={(event) => event.key === 'Escape' && onClose()}
      />
      <button type="submit">Save</button>
      <button type="button" class="secondary" onClick={onClose}>
        Cancel
      </button>
    </form>
  );
}

interface ItemActionsProps {
  items: Collection<Item>;
  sorted: ItemRecord[];
  index: number;
  hasFile: boolean;
  onEdit: () => void;
  run: Run;
}

function ItemActions({ items, sorted, index, hasFile, onEdit, run }: ItemActionsProps) {
  const item = sorted[index]!;
  return (
    <div class="item-actions">
      <button type="button" class="secondary" aria-label={`Edit “${item.title}”`} onClick={onEdit}>
        Edit
      </button>
      <button
        type="button"
        class="icon"
        aria-label={`Move “${item.title}” up`}
        disabled={index === 0}
        onClick={() => void run(() => moveItem(items, sorted, index, -1))}
      >
        ↑
      </button>
      <button
        type="button"
        class="icon"
        aria-label={`Move “${item.title}” down`}
        disabled={index === sorted.length - 1}
        onClick={() => void run(() => moveItem(items, sorted, index, 1))}
      >
        ↓
      </button>
      <label class="button secondary file-pick">
        {hasFile ? 'Replace file' : 'Attach file'}
        <input
          type="file"
          class="visually-hidden"
          aria-label={`Attach a file to “${item.title}”`}
          onChange={(event) => {
            const chosen = event.currentTarget.files?.[0];
            event.currentTarget.value = '';
            if (chosen) void run(() => attachFile(items, item.id, chosen));
          }}
        />
      </label>
      <button
        type="button"
        class="danger"
        aria-label={`Delete “${item.title}”`}
        onClick={() => void run(() => deleteItem(items, item.id))}
      >
        Delete
      </button>
    </div>
  );
}

interface ItemFileProps {
  items: Collection<Item>;
  item: ItemRecord;
  file: TaskFile;
  editable: boolean;
  run: Run;
}

function ItemFile({ items, item, file, editable, run }: ItemFileProps) {
  return (
    <div class="item-file">
      <FileLink item={item} file={file} />
      <span class="file-state">
        {file.info.state === 'upload'
          ? 'not uploaded yet'
          : file.info.state === 'removal'
            ? 'removal not synced yet'
            : `${Math.ceil(file.info.size / 1024)} KB`}
      </span>
      {editable && file.info.state !== 'removal' && (
        <button
          type="button"
          class="secondary"
          aria-label={`Remove the file of “${item.title}”`}
          onClick={() => void run(() => removeFile(items, item.id))}
        >
          Remove file
        </button>
      )}
    </div>
  );
}

function FileLink({ item, file }: { item: ItemRecord; file: TaskFile }) {
  if (file.url && file.image) {
    // Clicked, the image is downloaded: never opened in a tab of this app's origin.
    return (
      <a href={file.url} download={file.info.filename}>
        <img src={file.url} alt={`${file.info.filename} (on “${item.title}”)`} />
      </a>
    );
  }
  if (file.url) {
    return (
      <a href={file.url} download={file.info.filename}>
        {file.info.filename}
      </a>
    );
  }
  return (
    <span>
      {file.info.filename}
      {file.progress !== null
        ? ` — downloading ${Math.round((100 * file.progress) / Math.max(1, file.info.size))}%`
        : ''}
    </span>
  );
}
