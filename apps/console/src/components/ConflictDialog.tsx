/**
 * A write refused because the object changed since it was read (412): both versions side by
 * side, and the three ways out — keep theirs, overwrite with mine, or go on editing mine on top
 * of theirs.
 */
import type { KintoObject } from '@quire/client/admin';
import { useEffect, useState } from 'preact/hooks';
import { type Saving, useSaving } from '../lib/hooks.js';
import { editableFields, putObject } from '../lib/objects.js';

/** What the person compares: their fields, not the server's stamps (`last_modified`, a record's `schema` version). */
function comparable(object: Record<string, unknown>): Record<string, unknown> {
  const { schema, ...rest } = editableFields(object);
  return typeof schema === 'number' ? rest : { ...rest, ...(schema === undefined ? {} : { schema }) };
}
import { formatTimestamp } from '../lib/format.js';
import { DiffView } from './DiffView.js';
import { useConsole } from './context.js';
import { Dialog } from './ui.js';

export function ConflictDialog({
  noun,
  mine,
  theirs,
  onTakeTheirs,
  onOverwrite,
  onEditOnTop,
  onClose,
}: {
  noun: string;
  mine: Record<string, unknown>;
  /** The server's version now, or null when it was deleted meanwhile. */
  theirs: KintoObject | null;
  onTakeTheirs: () => void;
  onOverwrite: () => void;
  onEditOnTop: () => void;
  onClose: () => void;
}) {
  return (
    <Dialog
      title={theirs ? `This ${noun} was changed meanwhile` : `This ${noun} was deleted meanwhile`}
      wide
      onClose={onClose}
      footer={
        <>
          <button type="button" class="button secondary" onClick={onTakeTheirs}>
            {theirs ? 'Discard mine, keep theirs' : 'Discard my changes'}
          </button>
          {theirs ? (
            <button type="button" class="button secondary" onClick={onEditOnTop}>
              Keep editing mine
            </button>
          ) : null}
          <button type="button" class="button danger" onClick={onOverwrite}>
            {theirs ? 'Overwrite with mine' : 'Recreate with mine'}
          </button>
        </>
      }
    >
      <p>
        {theirs ? (
          <>
            Someone saved another version at <strong>{formatTimestamp(theirs.last_modified)}</strong>, after you opened
            it. Your changes were not saved. Compare both versions and choose which one to keep.
          </>
        ) : (
          <>Someone deleted it after you opened it. Your changes were not saved.</>
        )}
      </p>
      <DiffView
        before={theirs ? comparable(theirs) : undefined}
        after={comparable(mine)}
        beforeLabel="On the server now (theirs)"
        afterLabel="Your version (mine)"
      />
    </Dialog>
  );
}

/** A save refused with 412: what was sent (`mine`) and the server's version now (`theirs`). */
export interface SaveConflict {
  theirs: KintoObject | null;
  mine: Record<string, unknown>;
}

/**
 * The conflict dialog wired the way every editor answers it: keep theirs (`onTheirs`, with null
 * when it was deleted), go on editing on top of their version (`onRebase` with its timestamp),
 * or overwrite it (`onOverwrite` with the If-Match to send, null to recreate).
 */
export function SaveConflictDialog({
  noun,
  conflict,
  onClose,
  onTheirs,
  onRebase,
  onOverwrite,
}: {
  noun: string;
  conflict: SaveConflict | null;
  onClose: () => void;
  onTheirs: (theirs: KintoObject | null) => void;
  onRebase: (lastModified: number) => void;
  onOverwrite: (lastModified: number | null) => void;
}) {
  if (!conflict) return null;
  const { theirs } = conflict;
  return (
    <ConflictDialog
      noun={noun}
      mine={conflict.mine}
      theirs={theirs}
      onClose={onClose}
      onTakeTheirs={() => {
        onClose();
        onTheirs(theirs);
      }}
      onEditOnTop={() => {
        if (theirs) onRebase(theirs.last_modified);
        onClose();
      }}
      onOverwrite={() => onOverwrite(theirs ? theirs.last_modified : null)}
    />
  );
}

/**
 * Saving a whole object (PUT) with If-Match on the version being edited (`object`): `save`
 * sends `data` and announces `notice`; a 412 opens `conflictDialog`, whose choices save again
 * on top of their version or take it (`onGone` when it was deleted meanwhile).
 */
export function useObjectSave(
  path: string,
  object: KintoObject,
  notice: string,
  onSaved: (object: KintoObject) => void,
): {
  saving: Saving;
  save: (data: Record<string, unknown>, lastModified?: number | null) => Promise<void>;
  conflictDialog: (noun: string, onGone?: () => void) => ReturnType<typeof SaveConflictDialog>;
} {
  const { api, notify } = useConsole();
  const saving = useSaving();
  const [base, setBase] = useState(object.last_modified);
  const [conflict, setConflict] = useState<SaveConflict | null>(null);
  useEffect(() => setBase(object.last_modified), [object]);

  async function save(data: Record<string, unknown>, lastModified: number | null = base) {
    await saving.run(async () => {
      const result = await putObject(api, path, data, lastModified);
      if (result.status === 'error') throw result.error;
      if (result.status === 'conflict') return setConflict({ theirs: result.theirs, mine: data });
      setConflict(null);
      notify(notice);
      onSaved(result.object);
    });
  }

  const conflictDialog = (noun: string, onGone?: () => void) => (
    <SaveConflictDialog
      noun={noun}
      conflict={conflict}
      onClose={() => setConflict(null)}
      onTheirs={(theirs) => (theirs ? onSaved(theirs) : onGone?.())}
      onRebase={setBase}
      onOverwrite={(lastModified) => conflict && void save(conflict.mine, lastModified)}
    />
  );
  return { saving, save, conflictDialog };
}
