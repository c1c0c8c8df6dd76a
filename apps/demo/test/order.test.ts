/** Fractional positions: a move rewrites one item, unless no number fits between the neighbours. */
import { describe, expect, it } from 'vitest';
import { byPosition, moveWrites, positionAtEnd, type Positioned } from '../src/order.js';

const items = (...positions: number[]): Positioned[] => positions.map((position, i) => ({ id: `i${i}`, position }));

/** Applies the writes and returns the ids in their new order. */
function applyMove(list: Positioned[], index: number, direction: -1 | 1): string[] {
  const writes = new Map(moveWrites(list, index, direction).map((write) => [write.id, write.position]));
  return byPosition(list.map((item) => ({ ...item, position: writes.get(item.id) ?? item.position }))).map(
    (item) => item.id,
  );
}

describe('item order', () => {
  it('sorts by position, ties by id, items without a usable position last', () => {
    const list = [
      { id: 'b', position: 1 },
      { id: 'a', position: 1 },
      { id: 'z', position: Number.NaN },
      { id: 'c', position: 0.5 },
    ];
    expect(byPosition(list).map((item) => item.id)).toEqual(['c', 'a', 'b', 'z']);
  });

  it('appends after the last position', () => {
    expect(positionAtEnd([])).toBe(1);
    expect(positionAtEnd(items(1, 2.5, 2))).toBe(3);
  });

  it('moves an item with one write: to the midpoint, or one past the end', () => {
    const list = items(1, 2, 3, 4);
    expect(moveWrites(list, 2, -1)).toEqual([{ id: 'i2', position: 1.5 }]);
    expect(moveWrites(list, 1, -1)).toEqual([{ id: 'i1', position: 0 }]);
    expect(moveWrites(list, 2, 1)).toEqual([{ id: 'i2', position: 5 }]);
    expect(applyMove(list, 3, -1)).toEqual(['i0', 'i1', 'i3', 'i2']);
  });

  it('does nothing at either end', () => {
    expect(moveWrites(items(1, 2), 0, -1)).toEqual([]);
    expect(moveWrites(items(1, 2), 1, 1)).toEqual([]);
  });

  it('renumbers when the neighbours share a position', () => {
    const list = items(1, 1, 1);
    expect(moveWrites(list, 2, -1)).toEqual([
      { id: 'i2', position: 2 },
      { id: 'i1', position: 3 },
    ]);
    expect(applyMove(list, 2, -1)).toEqual(['i0', 'i2', 'i1']);
    // Only what changes is written.
    expect(moveWrites(items(1, 2, 2, 3), 3, -1)).toEqual([{ id: 'i2', position: 4 }]);
  });

  it('keeps working after many moves into the same gap (precision runs out, then it renumbers)', () => {
    let list = items(1, 2, 3);
    for (let round = 0; round < 80; round++) {
      const moved = list[2]!.id;
      const writes = new Map(moveWrites(list, 2, -1).map((write) => [write.id, write.position]));
      list = byPosition(list.map((item) => ({ ...item, position: writes.get(item.id) ?? item.position })));
      expect(list[1]!.id).toBe(moved);
      expect(new Set(list.map((item) => item.position)).size).toBe(3);
    }
  });
});
