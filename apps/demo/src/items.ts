/** Item edits on a list's collection: all local and offline-first, synced by the auto-sync. */
import type { Collection, LocalRecord } from '@quire/client';
import { UserError } from './errors.js';
import type { Item } from './model.js';
import { moveWrites, positionAtEnd } from './order.js';

export type ItemRecord = LocalRecord<Item>;

function checkTitle(title: string): string {
  const text = title.trim();
  if (text === '') throw new UserError('A task needs some text.');
  if (text.length > 500) throw new UserError('A task has at most 500 characters.');
  return text;
}

// Adds to one list run one after another: someone typing fast submits the next task before the
// previous one is stored, and each must be placed after the one before it.
const pendingAdds = new WeakMap<Collection<Item>, Promise<unknown>>();

/** Appends a task, placed after every task stored so far (including adds still in flight). */
export function addItem(items: Collection<Item>, title: string): Promise<ItemRecord> {
  const text = checkTitle(title);
  const previous = pendingAdds.get(items) ?? Promise.resolve();
  const added = previous
    .catch(() => undefined)
    .then(async () => items.create({ title: text, done: 0, position: positionAtEnd(await items.list()) }));
  pendingAdds.set(items, added);
  return added;
}

export async function renameItem(items: Collection<Item>, id: string, title: string): Promise<void> {
  await items.update(id, { title: checkTitle(title) }, { patch: true });
}

export async function setDone(items: Collection<Item>, id: string, done: boolean): Promise<void> {
  await items.update(id, { done: done ? 1 : 0 }, { patch: true });
}

/** Moves `sorted[index]` one place up or down (usually one record rewritten, see order.ts). */
export async function moveItem(
  items: Collection<Item>,
  sorted: readonly ItemRecord[],
  index: number,
  direction: -1 | 1,
): Promise<void> {
  for (const write of moveWrites(sorted, index, direction))
    await items.update(write.id, { position: write.position }, { patch: true });
}

export async function deleteItem(items: Collection<Item>, id: string): Promise<void> {
  await items.delete(id);
}
