/**
 * A task changed here and on the server since the last sync (the `manual` strategy keeps both):
 * the two versions side by side, and the choice.
 */
import type { ConflictEntry, LocalRecord, ManualResolution } from '@quire/client';

function describe(record: LocalRecord | null): string {
  if (!record) return 'Deleted';
  const title = typeof record.title === 'string' ? record.title : '(no text)';
  return `${title} — ${record.done === 1 ? 'done' : 'not done'}`;
}

interface Props {
  conflict: ConflictEntry;
  busy: boolean;
  onResolve: (resolution: ManualResolution) => void;
}

export function ConflictPanel({ conflict, busy, onResolve }: Props) {
  const name =
    typeof conflict.local?.title === 'string'
      ? conflict.local.title
      : typeof conflict.remote?.title === 'string'
        ? conflict.remote.title
        : 'a task';
  return (
    <fieldset class="conflict" aria-label={`Conflict on “${name}”`}>
      <p>
        <strong>Changed in two places.</strong> Someone else saved a different version of this task while you were
        changing it. Which one should stay?
      </p>
      <dl class="versions">
        <div class="version">
          <dt>Yours</dt>
          <dd>{describe(conflict.local)}</dd>
        </div>
        <div class="version">
          <dt>Theirs</dt>
          <dd>{describe(conflict.remote)}</dd>
        </div>
      </dl>
      <div class="buttons">
        <button type="button" disabled={busy} onClick={() => onResolve('local')}>
          Keep mine
        </button>
        <button type="button" class="secondary" disabled={busy} onClick={() => onResolve('remote')}>
          Keep theirs
        </button>
      </div>
    </fieldset>
  );
}
