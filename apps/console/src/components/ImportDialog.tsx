/**
 * Bulk import into a collection: a JSON (list, `{"data": [...]}` or JSON lines) or CSV file,
 * previewed and checked against the collection's schema, then written through /batch with a
 * progress bar, and a report of every row that failed (downloadable).
 */
import { useMemo, useRef, useState } from 'preact/hooks';
import { toCsv } from '../lib/csv.js';
import { downloadFile, formatCell, formatCount, plural } from '../lib/format.js';
import {
  type CsvTyping,
  failureRows,
  type ImportMode,
  type ImportProgress,
  parseImport,
  runImport,
} from '../lib/importer.js';
import { useValidator } from '../lib/hooks.js';
import { isActiveSchema, type JsonSchema, readablePath } from '../lib/schema.js';
import { useConsole } from './context.js';
import { Dialog, Notice } from './ui.js';

type ImportDialogProps = {
  bid: string;
  cid: string;
  schema: JsonSchema | null;
  onClose: () => void;
  onImported: () => void;
};
type ImportFile = { name: string; text: string };
type Parsed = ReturnType<typeof parseImport>;
type Invalid = Array<{ row: number; message: string }>;

/** The rows that the collection's schema refuses, with the first reason for each. */
function useSchemaProblems(parsed: Parsed | null, schema: JsonSchema | null): Invalid {
  const validator = useValidator(isActiveSchema(schema));
  return useMemo(() => {
    if (!parsed || !isActiveSchema(schema) || !validator) return [];
    const found: Invalid = [];
    for (const row of parsed.rows) {
      const errors = validator.validateRecord(row.data, schema, row.id);
      if (errors.length)
        found.push({ row: row.row, message: `${readablePath(errors[0]!.path)} ${errors[0]!.message}` });
    }
    return found;
  }, [parsed, schema, validator]);
}

/** The chosen file, its parse and options, and the import's run (stoppable) and progress. */
function useImport({ bid, cid, schema, onImported }: ImportDialogProps) {
  const { api, hello, notify } = useConsole();
  const [file, setFile] = useState<ImportFile | null>(null);
  const [typing, setTyping] = useState<CsvTyping>(isActiveSchema(schema) ? 'schema' : 'auto');
  const [mode, setMode] = useState<ImportMode>('upsert');
  const [progress, setProgress] = useState<ImportProgress | null>(null);
  const [running, setRunning] = useState(false);
  const controller = useRef<AbortController | null>(null);
  const parsed = useMemo(
    () => (file ? parseImport(file.name, file.text, { typing, schema }) : null),
    [file, typing, schema],
  );
  const invalid = useSchemaProblems(parsed, schema);

  async function read(chosen: File | undefined) {
    if (!chosen) return;
    setProgress(null);
    setFile({ name: chosen.name, text: await chosen.text() });
  }

  async function start() {
    if (!parsed?.rows.length) return;
    controller.current = new AbortController();
    setRunning(true);
    try {
      const result = await runImport(api, {
        bucket: bid,
        collection: cid,
        rows: parsed.rows,
        mode,
        batchSize: hello.settings.batch_max_requests ?? null,
        signal: controller.current.signal,
        onProgress: setProgress,
      });
      setProgress(result);
      const written = result.created + result.replaced;
      const failed = result.failures.length ? `, ${formatCount(result.failures.length)} failed` : '';
      notify(`${plural(written, 'record')} imported${failed}.`, result.failures.length ? 'info' : 'success');
    } catch (error) {
      if ((error as Error).name !== 'AbortError') notify(`Import stopped: ${(error as Error).message}`, 'error');
    } finally {
      setRunning(false);
      onImported();
    }
  }

  const stop = () => controller.current?.abort();
  return { file, typing, setTyping, mode, setMode, progress, running, parsed, invalid, read, start, stop };
}

type Import = ReturnType<typeof useImport>;

export function ImportDialog(props: ImportDialogProps) {
  const { cid, schema, onClose } = props;
  const state = useImport(props);
  const { progress, running } = state;
  const finished = progress && !running;

  return (
    <Dialog
      title={`Import records into ${cid}`}
      wide
      onClose={() => {
        state.stop();
        onClose();
      }}
      footer={<ImportFooter state={state} finished={Boolean(finished)} onClose={onClose} />}
    >
      {!running && !finished ? (
        <>
          <ImportDrop file={state.file} parsed={state.parsed} onFile={(chosen) => void state.read(chosen)} />
          <ImportOptions state={state} schema={schema} />
          <ImportWarnings parsed={state.parsed} invalid={state.invalid} />
          <ImportPreview parsed={state.parsed} />
        </>
      ) : progress ? (
        <ImportReport progress={progress} running={running} cid={cid} />
      ) : null}
    </Dialog>
  );
}

function ImportFooter({ state, finished, onClose }: { state: Import; finished: boolean; onClose: () => void }) {
  const { parsed } = state;
  if (state.running) {
    return (
      <button type="button" class="button secondary" onClick={state.stop}>
        Stop the import
      </button>
    );
  }
  if (finished) {
    return (
      <button type="button" class="button" onClick={onClose}>
        Done
      </button>
    );
  }
  return (
    <>
      <button type="button" class="button secondary" onClick={onClose}>
        Cancel
      </button>
      <button type="button" class="button" disabled={!parsed?.rows.length} onClick={() => void state.start()}>
        {parsed?.rows.length ? `Import ${plural(parsed.rows.length, 'record')}` : 'Import'}
      </button>
    </>
  );
}

function ImportDrop(props: {
  file: ImportFile | null;
  parsed: Parsed | null;
  onFile: (chosen: File | undefined) => void;
}) {
  const { file, parsed, onFile } = props;
  const [dragging, setDragging] = useState(false);
  return (
    <label
      class={dragging ? 'dropzone dragging' : 'dropzone'}
      onDragOver={(event) => {
        event.preventDefault();
        setDragging(true);
      }}
      onDragLeave={() => setDragging(false)}
      onDrop={(event) => {
        event.preventDefault();
        setDragging(false);
        onFile(event.dataTransfer?.files[0]);
      }}
    >
      <input
        type="file"
        accept=".json,.jsonl,.ndjson,.csv,.tsv,.txt,application/json,text/csv"
        aria-label="File to import"
        onChange={(event) => onFile(event.currentTarget.files?.[0])}
      />
      <span class="button secondary small dropzone-button" aria-hidden="true">
        {file ? 'Choose another file' : 'Choose a file'}
      </span>
      <span class="dropzone-text">
        {file ? (
          <>
            <strong>{file.name}</strong> · {parsed?.format} · {plural(parsed?.rows.length ?? 0, 'record')}
          </>
        ) : (
          <>
            Or drop it here: JSON (a list, or <code>{'{"data": [...]}'}</code> as the server lists records), JSON lines,
            or CSV with a header row. An <code>id</code> field or column keeps the records' ids.
          </>
        )}
      </span>
    </label>
  );
}

function ImportOptions({ state, schema }: { state: Import; schema: JsonSchema | null }) {
  const { mode, setMode, typing, setTyping } = state;
  return (
    <div class="import-options">
      <fieldset class="fieldset inline">
        <legend>Records whose id exists</legend>
        <label class="checkbox">
          <input type="radio" name="mode" checked={mode === 'upsert'} onChange={() => setMode('upsert')} />
          Replace them
        </label>
        <label class="checkbox">
          <input type="radio" name="mode" checked={mode === 'create'} onChange={() => setMode('create')} />
          Keep them (report as failed)
        </label>
      </fieldset>
      {state.parsed?.format === 'CSV' ? (
        <fieldset class="fieldset inline">
          <legend>CSV values</legend>
          {isActiveSchema(schema) ? (
            <label class="checkbox">
              <input type="radio" name="typing" checked={typing === 'schema'} onChange={() => setTyping('schema')} />
              Typed by the schema
            </label>
          ) : null}
          <label class="checkbox">
            <input type="radio" name="typing" checked={typing === 'auto'} onChange={() => setTyping('auto')} />
            Numbers, true/false and JSON detected
          </label>
          <label class="checkbox">
            <input type="radio" name="typing" checked={typing === 'text'} onChange={() => setTyping('text')} />
            All text
          </label>
        </fieldset>
      ) : null}
    </div>
  );
}

function ImportWarnings({ parsed, invalid }: { parsed: Parsed | null; invalid: Invalid }) {
  return (
    <>
      {parsed?.problems.length ? (
        <Notice kind="warning">
          {plural(parsed.problems.length, 'line')} cannot be imported: {parsed.problems.slice(0, 3).join('; ')}
          {parsed.problems.length > 3 ? '…' : ''}
        </Notice>
      ) : null}
      {invalid.length ? (
        <Notice kind="warning">
          {plural(invalid.length, 'record')} do{invalid.length === 1 ? 'es' : ''} not match the collection's schema and
          will be refused (row {invalid[0]!.row}: {invalid[0]!.message}
          {invalid.length > 1 ? ', …' : ''}).
        </Notice>
      ) : null}
    </>
  );
}

/** The first 5 rows, 6 columns. */
function ImportPreview({ parsed }: { parsed: Parsed | null }) {
  const preview = parsed?.rows.slice(0, 5) ?? [];
  const previewColumns = (parsed?.columns ?? []).slice(0, 6);
  if (!preview.length) return null;
  return (
    <div class="table-wrap">
      <table class="simple-table" aria-label="Preview">
        <caption class="muted small">
          First {preview.length} of {formatCount(parsed!.rows.length)}
        </caption>
        <thead>
          <tr>
            <th>#</th>
            {previewColumns.map((column) => (
              <th key={column}>{column}</th>
            ))}
          </tr>
        </thead>
        <tbody>
          {preview.map((row) => (
            <tr key={row.row}>
              <td class="muted">{row.row}</td>
              {previewColumns.map((column) => (
                <td key={column}>{formatCell(column === 'id' ? row.id : row.data[column])}</td>
              ))}
            </tr>
          ))}
        </tbody>
      </table>
    </div>
  );
}

function ImportReport({ progress, running, cid }: { progress: ImportProgress; running: boolean; cid: string }) {
  const percent = progress.total ? Math.round((progress.done / progress.total) * 100) : 100;
  return (
    <div class="import-report">
      <div class="progress-line">
        <label for="import-progress">
          {running ? 'Importing' : 'Imported'} {formatCount(progress.done)} of {formatCount(progress.total)} · {percent}
          %
        </label>
        <progress
          id="import-progress"
          max={progress.total}
          value={progress.done}
          aria-valuemax={progress.total}
          aria-valuenow={progress.done}
        />
      </div>
      <p class="import-summary">
        <span class="badge ok">{formatCount(progress.created)} created</span>{' '}
        <span class="badge">{formatCount(progress.replaced)} replaced</span>{' '}
        <span class={progress.failures.length ? 'badge bad' : 'badge'}>
          {formatCount(progress.failures.length)} failed
        </span>
        {!running && progress.done < progress.total ? (
          <span class="badge warn">{formatCount(progress.total - progress.done)} not sent (stopped)</span>
        ) : null}
      </p>
      {progress.failures.length ? (
        <>
          <FailureTable failures={progress.failures} />
          {progress.failures.length > 500 ? (
            <p class="muted small">The first 500 are shown; the download has them all.</p>
          ) : null}
          {!running ? <FailureDownloads cid={cid} failures={progress.failures} /> : null}
        </>
      ) : !running ? (
        <p>Every record was imported.</p>
      ) : null}
    </div>
  );
}

type Failures = ImportProgress['failures'];

/** The first 500 failures, by row. */
function FailureTable({ failures }: { failures: Failures }) {
  return (
    <div class="table-wrap tall">
      <table class="simple-table" aria-label="Failed records">
        <thead>
          <tr>
            <th>Row</th>
            <th>Id</th>
            <th>Status</th>
            <th>Why</th>
          </tr>
        </thead>
        <tbody>
          {[...failures]
            .sort((a, b) => a.row - b.row)
            .slice(0, 500)
            .map((failure, index) => (
              <tr key={index}>
                <td>{failure.row}</td>
                <td>{failure.id ?? <span class="muted">(new)</span>}</td>
                <td>{failure.status || '—'}</td>
                <td>{failure.message}</td>
              </tr>
            ))}
        </tbody>
      </table>
    </div>
  );
}

/** The whole failure report, as CSV or JSON. */
function FailureDownloads({ cid, failures }: { cid: string; failures: Failures }) {
  return (
    <div class="form-actions">
      <button
        type="button"
        class="button secondary small"
        onClick={() => downloadFile(`${cid}-import-failures.csv`, toCsv(failureRows(failures)), 'text/csv')}
      >
        Download the report (CSV)
      </button>
      <button
        type="button"
        class="button secondary small"
        onClick={() =>
          downloadFile(`${cid}-import-failures.json`, `${JSON.stringify(failures, null, 2)}\n`, 'application/json')
        }
      >
        Download the report (JSON)
      </button>
    </div>
  );
}
