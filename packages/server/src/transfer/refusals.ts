/**
 * What an import refused, in words naming its lines, whichever store found it (the stores report
 * `ImportConflict`s: storage/bulk-import.ts).
 */
import type { Conflict, ImportRun } from '../storage/bulk-import.js';

export function describeConflict(conflict: Conflict): string {
  switch (conflict.kind) {
    case 'not-empty':
      return (
        'the target store already holds data: import into an empty store, ' +
        'or pass --replace to delete everything in it first'
      );
    case 'running': {
      const which = conflict.run ? ` (${describeRun(conflict.run)})` : '';
      return `another import is writing to this store${which}: wait for it to end`;
    }
    case 'parent-missing':
      return (
        `line ${conflict.line}: its parent ${conflict.parent} is not in the import ` +
        '(parents come before their children, as quire export writes them)'
      );
    case 'parent-deleted':
      return `line ${conflict.line}: its parent ${conflict.parent} is deleted`;
    case 'repeated': {
      const what =
        conflict.resource === 'history'
          ? `history entry ${conflict.stamp}`
          : `${conflict.resource} ${JSON.stringify(conflict.id)}`;
      const under = conflict.parent ? ` under ${conflict.parent}` : '';
      return (
        `line ${conflict.line}: ${what}${under} was already given on line ${conflict.earlier} ` +
        '(pass --replace to let the later line win)'
      );
    }
    case 'timestamp-taken':
      return (
        `line ${conflict.line}: last_modified ${conflict.lastModified} is already that of ` +
        `${conflict.resource} ${JSON.stringify(conflict.id)} (line ${conflict.earlier}): ` +
        'timestamps are unique in a scope'
      );
    case 'deleted-with-children':
      return (
        `line ${conflict.line}: ${conflict.resource} ${JSON.stringify(conflict.id)} is deleted here, ` +
        `but line ${conflict.child} put an object under it`
      );
    case 'file-taken':
      return (
        `line ${conflict.line}: the file ${JSON.stringify(conflict.location)} is already that of the index entry ` +
        `on line ${conflict.earlier}: a file belongs to one record`
      );
  }
}

/** `from quire.ndjson, started 2026-…Z by process 123 on host` (and how it ended, when known). */
function describeRun(run: ImportRun): string {
  const how = run.outcome ? `, ${run.outcome}` : '';
  const started = new Date(run.startedAt).toISOString();
  return `from ${run.input}, started ${started} by process ${run.pid} on ${run.host}${how}`;
}

/** What the next import says of one that never finished. */
export function describeUnfinished(run: ImportRun): string {
  const end = run.outcome ?? 'killed, or its connection to the store lost';
  return (
    `an earlier import (${describeRun({ ...run, outcome: null })}) did not finish (${end}): ` +
    'it changed nothing, the store was left as it was before it'
  );
}
