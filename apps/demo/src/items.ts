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

export async function addItem(items: Collection<Item>, existing: readonly ItemRecord[], title: string): Promise<ItemRecord> {
  return items.create({ title: checkTitle(title), done: 0, position: positionAtEnd(existing) });
}

export async function renameItem(items: Collection<Item>, id: string, title: string): Promise<void> {
  await items.update(id, { title: checkTitle(title) }, { patch: true });
}

export async function setDone(items: Collection<Item>, id: string, done: boolean): Promise<void> {
  await items.update(id, { done: done ? 1 : 0 }, { patch: true });
}

/** Moves `sorted[index]` one place up or down (usually one record rewritten, see order.ts). */
export async function moveItem(items: Collection<Item>, sorted: readonly ItemRecord[], index: number, direction: -1 | 1): Promise<void> {
  for (const write of moveWrites(sorted, index, direction)) await items.update(write.id, { position: write.position }, { patch: true });
}

export async function deleteItem(items: Collection<Item>, id: string): Promise<void> {
  await items.delete(id);
}
