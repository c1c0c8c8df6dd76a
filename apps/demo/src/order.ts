/**
 * Item order by fractional positions: moving an item rewrites only that item's `position` (the
 * midpoint between its new neighbours), so a reorder is one record to sync and rarely conflicts
 * with what others do. Equal positions (two people adding at the end at once) tie-break by id.
 */
export interface Positioned {
  id: string;
  position: number;
}

export function byPosition<T extends Positioned>(items: readonly T[]): T[] {
  const key = (item: T) => (Number.isFinite(item.position) ? item.position : Number.MAX_VALUE);
  return [...items].sort((a, b) => key(a) - key(b) || (a.id < b.id ? -1 : a.id > b.id ? 1 : 0));
}

/** A position after every item. */
export function positionAtEnd(items: readonly Positioned[]): number {
  let last = 0;
  for (const item of items) if (Number.isFinite(item.position) && item.position > last) last = item.position;
  return Math.floor(last) + 1;
}

export type Move = { id: string; position: number }[];

/**
 * The writes that move `sorted[index]` one place up (-1) or down (+1): usually one, the moved
 * item's new position; every item renumbered 1, 2, 3… when no number fits between the
 * neighbours (equal positions, or floating-point precision used up). Empty at either end.
 */
export function moveWrites(sorted: readonly Positioned[], index: number, direction: -1 | 1): Move {
  const item = sorted[index];
  const neighbour = sorted[index + direction];
  if (!item || !neighbour) return [];
  const beyond = sorted[index + 2 * direction];
  const target = beyond ? (neighbour.position + beyond.position) / 2 : neighbour.position + direction;
  const [low, high] = beyond
    ? [Math.min(neighbour.position, beyond.position), Math.max(neighbour.position, beyond.position)]
    : direction < 0
      ? [-Infinity, neighbour.position]
      : [neighbour.position, Infinity];
  if (Number.isFinite(target) && target > low && target < high) return [{ id: item.id, position: target }];
  const reordered = [...sorted];
  reordered.splice(index, 1);
  reordered.splice(index + direction, 0, item);
  return reordered.flatMap((entry, i) => (entry.position === i + 1 ? [] : [{ id: entry.id, position: i + 1 }]));
}
