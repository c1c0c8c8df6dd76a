/** Two versions of a JSON value, side by side or unified, changed lines highlighted. */
import { useMemo, useState } from 'preact/hooks';
import { type DiffLine, diffLines, hunks, stableStringify } from '../lib/diff.js';

interface SplitRow {
  left?: DiffLine;
  right?: DiffLine;
  skipped?: number;
}

/** Unchanged lines on both sides; a run of removals next to the additions that replace them. */
function splitRows(lines: DiffLine[]): SplitRow[] {
  const rows: SplitRow[] = [];
  let removed: DiffLine[] = [];
  let added: DiffLine[] = [];
  const flush = () => {
    for (let i = 0; i < Math.max(removed.length, added.length); i++) rows.push({ left: removed[i], right: added[i] });
    removed = [];
    added = [];
  };
  for (const line of lines) {
    if (line.kind === 'removed') removed.push(line);
    else if (line.kind === 'added') added.push(line);
    else {
      flush();
      rows.push({ left: line, right: line });
    }
  }
  flush();
  return rows;
}

export function DiffView({
  before,
  after,
  beforeLabel,
  afterLabel,
  initialMode = 'split',
}: {
  before: unknown;
  after: unknown;
  beforeLabel: string;
  afterLabel: string;
  initialMode?: 'split' | 'unified';
}) {
  const [mode, setMode] = useState(initialMode);
  const [expanded, setExpanded] = useState(false);
  const lines = useMemo(
    () =>
      diffLines(before === undefined ? '' : stableStringify(before), after === undefined ? '' : stableStringify(after)),
    [before, after],
  );
  const changes = lines.filter((line) => line.kind !== 'same').length;
  const groups = useMemo(() => (expanded ? [{ lines, skippedBefore: 0 }] : hunks(lines, 3)), [lines, expanded]);

  return (
    <div class="diff">
      <div class="diff-toolbar">
        <span class="muted small">
          {changes === 0 ? 'No difference' : `${changes} changed line${changes === 1 ? '' : 's'}`}
        </span>
        <span class="toolbar-spacer" />
        <label class="checkbox small">
          <input type="checkbox" checked={expanded} onChange={(event) => setExpanded(event.currentTarget.checked)} />
          Show unchanged lines
        </label>
        <div class="segmented small" role="radiogroup" aria-label="Diff layout">
          {(['split', 'unified'] as const).map((candidate) => (
            <label key={candidate} class={candidate === mode ? 'segment active' : 'segment'}>
              <input type="radio" name="diff-mode" checked={candidate === mode} onChange={() => setMode(candidate)} />
              {candidate === 'split' ? 'Side by side' : 'Unified'}
            </label>
          ))}
        </div>
      </div>
      {mode === 'split' ? (
        <SplitTable groups={groups} beforeLabel={beforeLabel} afterLabel={afterLabel} />
      ) : (
        <UnifiedTable groups={groups} label={`Differences between ${beforeLabel} and ${afterLabel}`} />
      )}
    </div>
  );
}

type Groups = Array<{ lines: DiffLine[]; skippedBefore: number }>;

/** The row that stands for the unchanged lines folded before a group. */
function skipRow(group: Groups[number], groupIndex: number) {
  if (!group.skippedBefore) return [];
  return [
    <tr key={`s${groupIndex}`} class="diff-skip">
      <td colSpan={4}>⋯ {group.skippedBefore} unchanged lines</td>
    </tr>,
  ];
}

/** Before on the left, after on the right, changed lines facing each other. */
function SplitTable({ groups, beforeLabel, afterLabel }: { groups: Groups; beforeLabel: string; afterLabel: string }) {
  return (
    <table class="diff-table mode-split" aria-label={`Differences between ${beforeLabel} and ${afterLabel}`}>
      <colgroup>
        <col class="ln-col" />
        <col />
        <col class="ln-col" />
        <col />
      </colgroup>
      <thead>
        <tr>
          <th colSpan={2}>{beforeLabel}</th>
          <th colSpan={2}>{afterLabel}</th>
        </tr>
      </thead>
      <tbody>
        {groups.flatMap((group, groupIndex) => [
          ...skipRow(group, groupIndex),
          ...splitRows(group.lines).map((row, index) => (
            <tr key={`${groupIndex}-${index}`}>
              <td class="ln">{row.left?.oldLine ?? ''}</td>
              <td class={row.left ? (row.left.kind === 'removed' ? 'code removed' : 'code') : 'code empty'}>
                {row.left?.text ?? ''}
              </td>
              <td class="ln">{row.right?.newLine ?? ''}</td>
              <td class={row.right ? (row.right.kind === 'added' ? 'code added' : 'code') : 'code empty'}>
                {row.right?.text ?? ''}
              </td>
            </tr>
          )),
        ])}
      </tbody>
    </table>
  );
}

/** One column of lines, each marked added, removed or unchanged. */
function UnifiedTable({ groups, label }: { groups: Groups; label: string }) {
  return (
    <table class="diff-table mode-unified" aria-label={label}>
      <colgroup>
        <col class="ln-col" />
        <col class="ln-col" />
        <col class="sign-col" />
        <col />
      </colgroup>
      <tbody>
        {groups.flatMap((group, groupIndex) => [
          ...skipRow(group, groupIndex),
          ...group.lines.map((line, index) => (
            <tr key={`${groupIndex}-${index}`} class={line.kind}>
              <td class="ln">{line.oldLine ?? ''}</td>
              <td class="ln">{line.newLine ?? ''}</td>
              <td class="sign">{line.kind === 'added' ? '+' : line.kind === 'removed' ? '−' : ''}</td>
              <td class="code">{line.text}</td>
            </tr>
          )),
        ])}
      </tbody>
    </table>
  );
}
