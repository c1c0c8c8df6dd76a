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

export function ItemRow({ items, sorted, index, editable, conflict, busy, onResolve, run }: Props) {
  const item = sorted[index]!;
  const [editing, setEditing] = useState(false);
  const [text, setText] = useState(item.title);
  // The box shows the click at once; the stored value follows when the local write lands.
  const [ticked, setTicked] = useState<boolean | null>(null);
  useEffect(() => setTicked(null), [item.done]);
  const done = ticked ?? item.done === 1;
  const checkboxId = `done-${item.id}`;
  const file = useTaskFile(items, item.id);

  return (
    <li class={`item${done ? ' done' : ''}${conflict ? ' has-conflict' : ''}`}>
      <div class="item-main">
        <input
          id={checkboxId}
          type="checkbox"
          checked={done}
          disabled={!editable}
          aria-label={`Done: ${item.title}`}
          onChange={(event) => {
            const checked = event.currentTarget.checked;
            setTicked(checked);
            void run(() => setDone(items, item.id, checked)).then((ok) => ok || setTicked(null));
          }}
        />
        {editing ? (
          <form
            class="inline edit-item"
            onSubmit={(event) => {
              event.preventDefault();
              void run(async () => {
                await renameItem(items, item.id, text);
                setEditing(false);
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
              onKeyDown={(event) => event.key === 'Escape' && setEditing(false)}
            />
            <button type="submit">Save</button>
            <button type="button" class="secondary" onClick={() => setEditing(false)}>
              Cancel
            </button>
          </form>
        ) : (
          <span class="item-title">{item.title}</span>
        )}
        {editable && !editing && (
          <div class="item-actions">
            <button
              type="button"
              class="secondary"
              aria-label={`Edit “${item.title}”`}
              onClick={() => {
                setText(item.title);
                setEditing(true);
              }}
            >
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
              {file ? 'Replace file' : 'Attach file'}
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
        )}
      </div>
      {file && (
        <div class="item-file">
          {file.url && file.image ? (
            // Clicked, the image is downloaded: never opened in a tab of this app's origin.
            <a href={file.url} download={file.info.filename}>
              <img src={file.url} alt={`${file.info.filename} (on “${item.title}”)`} />
            </a>
          ) : file.url ? (
            <a href={file.url} download={file.info.filename}>
              {file.info.filename}
            </a>
          ) : (
            <span>
              {file.info.filename}
              {file.progress !== null
                ? ` — downloading ${Math.round((100 * file.progress) / Math.max(1, file.info.size))}%`
                : ''}
            </span>
          )}
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
      )}
      {conflict && <ConflictPanel conflict={conflict} busy={busy} onResolve={onResolve} />}
    </li>
  );
}
