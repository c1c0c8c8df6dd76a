/**
 * A record's file (the `attachments` capability, the `kinto-attachment` plugin's protocol): what
 * it is (name, type, size), a download checked against its hash, an upload that adds or replaces
 * it, and its removal. Writes carry If-Match on the version shown: a record changed meanwhile is
 * refused (412) rather than overwritten; the record is read again after each write.
 */
import type { AttachmentInfo, AttachmentsCapability, KintoObject, TransferProgress } from '@quire/client/admin';
import { useState } from 'preact/hooks';
import { downloadFile, formatBytes } from '../lib/format.js';
import { paths } from '../lib/objects.js';
import { explain, statusOf } from '../lib/remote.js';
import { useCapabilities, useConsole } from './context.js';
import { Code, ConfirmDialog, FormError } from './ui.js';

type Transfer = { kind: 'upload' | 'download'; progress: TransferProgress };

/** The record's `attachment`, when it holds one the protocol's way. */
function attachmentOf(record: KintoObject): AttachmentInfo | null {
  const value = record.attachment as Partial<AttachmentInfo> | null | undefined;
  return value && typeof value.location === 'string' && typeof value.filename === 'string'
    ? (value as AttachmentInfo)
    : null;
}

type RecordFileProps = {
  bid: string;
  cid: string;
  record: KintoObject;
  capability: AttachmentsCapability;
  onChanged: (record: KintoObject) => void;
};

/** The file's state and its writes (upload, removal) and download, with their progress and errors. */
function useRecordFile({ bid, cid, record, onChanged }: RecordFileProps, attachment: AttachmentInfo | null) {
  const { api, notify } = useConsole();
  const [chosen, setChosen] = useState<File | null>(null);
  const [transfer, setTransfer] = useState<Transfer | null>(null);
  const [busy, setBusy] = useState(false);
  const [confirmRemove, setConfirmRemove] = useState(false);
  const [error, setError] = useState<string | null>(null);

  /** Runs a write, then shows the record as the server now has it. */
  async function write(action: () => Promise<unknown>, done: string) {
    setBusy(true);
    setError(null);
    try {
      await action();
      onChanged((await api.getObject(paths.record(bid, cid, record.id))).data);
      notify(done);
      setChosen(null);
    } catch (caught) {
      setError(
        statusOf(caught) === 412 ? 'The record changed since you opened it: reload it and try again.' : explain(caught),
      );
    } finally {
      setBusy(false);
      setTransfer(null);
    }
  }

  const upload = () =>
    chosen &&
    write(
      () =>
        api.addAttachment(bid, cid, record.id, chosen, {
          filename: chosen.name,
          ...(chosen.type ? { mimetype: chosen.type } : {}),
          ifMatch: record.last_modified,
          onProgress: (progress) => setTransfer({ kind: 'upload', progress }),
        }),
      attachment ? `File replaced by “${chosen.name}”.` : `File “${chosen.name}” uploaded.`,
    );

  const remove = () =>
    write(() => api.removeAttachment(bid, cid, record.id, { ifMatch: record.last_modified }), 'File removed.').finally(
      () => setConfirmRemove(false),
    );

  async function download() {
    if (!attachment) return;
    setBusy(true);
    setError(null);
    try {
      const blob = await api.getAttachment(bid, cid, record.id, {
        attachment,
        onProgress: (progress) => setTransfer({ kind: 'download', progress }),
      });
      downloadFile(attachment.filename, blob, attachment.mimetype);
    } catch (caught) {
      setError(explain(caught));
    } finally {
      setBusy(false);
      setTransfer(null);
    }
  }

  return { chosen, setChosen, transfer, busy, confirmRemove, setConfirmRemove, error, upload, remove, download };
}

export function RecordFile(props: RecordFileProps) {
  const { capability } = props;
  const { readonly } = useCapabilities();
  const attachment = attachmentOf(props.record);
  const file = useRecordFile(props, attachment);
  const { busy, transfer } = file;

  return (
    <section class="record-file" aria-label="Record file">
      {attachment ? <AttachmentFacts attachment={attachment} /> : <p class="muted">This record has no file.</p>}

      <div class="record-file-actions">
        {attachment ? (
          <button type="button" class="button secondary" disabled={busy} onClick={() => void file.download()}>
            Download
          </button>
        ) : null}
        {attachment && !readonly ? (
          <button
            type="button"
            class="button danger-outline"
            disabled={busy}
            onClick={() => file.setConfirmRemove(true)}
          >
            Remove the file
          </button>
        ) : null}
      </div>

      {readonly ? null : <FileUpload attachment={attachment} capability={capability} file={file} />}

      {transfer ? (
        <progress
          aria-label={transfer.kind === 'upload' ? 'Upload' : 'Download'}
          max={transfer.progress.total || 1}
          value={transfer.progress.loaded}
        />
      ) : null}
      <FormError error={file.error} />

      {file.confirmRemove && attachment ? (
        <ConfirmDialog
          title={`Remove “${attachment.filename}”?`}
          confirmLabel="Remove the file"
          danger
          busy={busy}
          onConfirm={() => void file.remove()}
          onClose={() => file.setConfirmRemove(false)}
        >
          <p>The record keeps its other fields; its file is deleted from the server.</p>
        </ConfirmDialog>
      ) : null}
    </section>
  );
}

function AttachmentFacts({ attachment }: { attachment: AttachmentInfo }) {
  return (
    <dl class="facts">
      <dt>Name</dt>
      <dd>
        <Code>{attachment.filename}</Code>
      </dd>
      <dt>Type</dt>
      <dd>{attachment.mimetype}</dd>
      <dt>Size</dt>
      <dd>{formatBytes(attachment.size)}</dd>
      <dt>SHA-256</dt>
      <dd class="muted small" title={attachment.hash}>
        {attachment.hash.slice(0, 16)}…
      </dd>
      {attachment.original ? (
        <>
          <dt>Stored</dt>
          <dd>
            gzipped, {formatBytes(attachment.size)} ({formatBytes(attachment.original.size)} as sent)
          </dd>
        </>
      ) : null}
    </dl>
  );
}

function FileUpload(props: {
  attachment: AttachmentInfo | null;
  capability: AttachmentsCapability;
  file: ReturnType<typeof useRecordFile>;
}) {
  const { attachment, capability, file } = props;
  const { chosen } = file;
  const tooLarge = chosen !== null && typeof capability.max_size === 'number' && chosen.size > capability.max_size;
  return (
    <div class="record-file-upload">
      <label class="dropzone">
        <input
          type="file"
          aria-label={attachment ? 'File to replace it with' : 'File to upload'}
          onChange={(event) => file.setChosen(event.currentTarget.files?.[0] ?? null)}
        />
        <span class="button secondary small dropzone-button" aria-hidden="true">
          {chosen ? 'Choose another file' : 'Choose a file'}
        </span>
        <span class="dropzone-text">
          {chosen ? (
            <>
              <strong>{chosen.name}</strong> · {chosen.type || 'unknown type'} · {formatBytes(chosen.size)}
            </>
          ) : (
            <>
              {attachment ? 'A new file replaces this one' : 'One file per record'}
              {typeof capability.max_size === 'number' ? `, up to ${formatBytes(capability.max_size)}` : ''}.
            </>
          )}
        </span>
      </label>
      <button
        type="button"
        class="button"
        disabled={!chosen || file.busy || tooLarge}
        onClick={() => void file.upload()}
      >
        {attachment ? 'Replace the file' : 'Upload'}
      </button>
      {tooLarge ? (
        <FormError error={`This file is larger than the server accepts (${formatBytes(capability.max_size ?? 0)}).`} />
      ) : null}
    </div>
  );
}
