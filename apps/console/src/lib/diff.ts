/**
 * Differences between two versions of an object: a line diff of their pretty JSON (keys sorted,
 * so that only real changes show), and the list of changed fields.
 */

/** JSON with object keys sorted at every level, two-space indented. */
export function stableStringify(value: unknown): string {
  return JSON.stringify(sortKeys(value), null, 2) ?? 'undefined';
}

function sortKeys(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(sortKeys);
  if (value !== null && typeof value === 'object') {
    const sorted: Record<string, unknown> = {};
    for (const key of Object.keys(value).sort()) sorted[key] = sortKeys((value as Record<string, unknown>)[key]);
    return sorted;
  }
  return value;
}

type DiffKind = 'same' | 'added' | 'removed';

export interface DiffLine {
  kind: DiffKind;
  text: string;
  /** Line numbers in the old and new text (1-based), when the line is there. */
  oldLine?: number;
  newLine?: number;
}

/** Myers' O(ND) line diff. */
export function diffLines(oldText: string, newText: string): DiffLine[] {
  const a = oldText.split('\n');
  const b = newText.split('\n');
  const n = a.length;
  const m = b.length;
  const max = n + m;
  const offset = max + 1;
  const v = new Int32Array(2 * max + 3);
  const trace: Int32Array[] = [];
  let found = false;
  for (let d = 0; d <= max && !found; d++) {
    trace.push(v.slice());
    for (let k = -d; k <= d; k += 2) {
      let x =
        k === -d || (k !== d && v[offset + k - 1]! < v[offset + k + 1]!) ? v[offset + k + 1]! : v[offset + k - 1]! + 1;
      let y = x - k;
      while (x < n && y < m && a[x] === b[y]) {
        x++;
        y++;
      }
      v[offset + k] = x;
      if (x >= n && y >= m) {
        found = true;
        break;
      }
    }
  }
  // Walk back through the saved states.
  const lines: DiffLine[] = [];
  let x = n;
  let y = m;
  for (let d = trace.length - 1; d >= 0; d--) {
    const state = trace[d]!;
    const k = x - y;
    const prevK = k === -d || (k !== d && state[offset + k - 1]! < state[offset + k + 1]!) ? k + 1 : k - 1;
    const prevX = d === 0 ? 0 : state[offset + prevK]!;
    const prevY = prevX - prevK;
    while (x > prevX && y > prevY) {
      lines.push({ kind: 'same', text: a[x - 1]!, oldLine: x, newLine: y });
      x--;
      y--;
    }
    if (d === 0) break;
    if (x === prevX) lines.push({ kind: 'added', text: b[y - 1]!, newLine: y });
    else lines.push({ kind: 'removed', text: a[x - 1]!, oldLine: x });
    x = prevX;
    y = prevY;
  }
  while (x > 0 && y > 0) {
    lines.push({ kind: 'same', text: a[x - 1]!, oldLine: x, newLine: y });
    x--;
    y--;
  }
  return lines.reverse();
}

interface DiffHunk {
  lines: DiffLine[];
  /** Unchanged lines folded before this hunk. */
  skippedBefore: number;
}

/** Changes with `context` unchanged lines around them; long unchanged runs are folded. */
export function hunks(lines: DiffLine[], context = 3): DiffHunk[] {
  const keep = new Array<boolean>(lines.length).fill(false);
  lines.forEach((line, index) => {
    if (line.kind === 'same') return;
    for (let i = Math.max(0, index - context); i <= Math.min(lines.length - 1, index + context); i++) keep[i] = true;
  });
  const result: DiffHunk[] = [];
  let skipped = 0;
  let current: DiffHunk | null = null;
  lines.forEach((line, index) => {
    if (!keep[index]) {
      skipped++;
      current = null;
      return;
    }
    if (!current) {
      current = { lines: [], skippedBefore: skipped };
      result.push(current);
      skipped = 0;
    }
    current.lines.push(line);
  });
  if (skipped && result.length) result.push({ lines: [], skippedBefore: skipped });
  return result;
}

interface FieldChange {
  field: string;
  kind: 'added' | 'removed' | 'changed';
}

/** Top-level fields that differ between two objects. */
export function changedFields(
  before: Record<string, unknown> | null | undefined,
  after: Record<string, unknown> | null | undefined,
): FieldChange[] {
  const old = before ?? {};
  const now = after ?? {};
  const keys = [...new Set([...Object.keys(old), ...Object.keys(now)])].sort();
  const changes: FieldChange[] = [];
  for (const key of keys) {
    const inOld = Object.hasOwn(old, key);
    const inNew = Object.hasOwn(now, key);
    if (!inOld) changes.push({ field: key, kind: 'added' });
    else if (!inNew) changes.push({ field: key, kind: 'removed' });
    else if (stableStringify(old[key]) !== stableStringify(now[key])) changes.push({ field: key, kind: 'changed' });
  }
  return changes;
}
