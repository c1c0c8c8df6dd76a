/**
 * Attachment metrics (with `metrics_enabled`): uploads by result, bytes received and stored,
 * files deleted, failures by operation, all labelled by backend (`local`, `s3`). Without
 * metrics, the same calls do nothing.
 */
import { Counter } from 'prom-client';
import type { Metrics } from '../observability/metrics.js';

export interface AttachmentMetrics {
  /** An upload ended: `stored` (the record holds it) or `refused` (4xx) or `failed` (5xx). */
  upload(result: 'stored' | 'refused' | 'failed', bytes: number): void;
  deleted(): void;
  failed(operation: 'upload' | 'delete' | 'download' | 'sweep'): void;
}

export function attachmentMetrics(metrics: Metrics | null, backend: string): AttachmentMetrics {
  if (!metrics) return { upload() {}, deleted() {}, failed() {} };
  const registers = [metrics.registry];
  const uploads = new Counter({
    name: 'quire_attachment_uploads_total',
    help: 'Attachment uploads, by backend and result (stored, refused: 4xx, failed: 5xx).',
    labelNames: ['backend', 'result'] as const,
    registers,
  });
  const bytes = new Counter({
    name: 'quire_attachment_upload_bytes_total',
    help: 'Bytes of the files stored (as sent), by backend.',
    labelNames: ['backend'] as const,
    registers,
  });
  const deletions = new Counter({
    name: 'quire_attachment_deleted_files_total',
    help: 'Files deleted (replaced, detached, or their record, collection or bucket deleted), by backend.',
    labelNames: ['backend'] as const,
    registers,
  });
  const failures = new Counter({
    name: 'quire_attachment_failures_total',
    help: 'Failed backend operations, by backend and operation.',
    labelNames: ['backend', 'operation'] as const,
    registers,
  });
  return {
    upload(result, size) {
      uploads.inc({ backend, result });
      if (result === 'stored') bytes.inc({ backend }, size);
      if (result === 'failed') failures.inc({ backend, operation: 'upload' });
    },
    deleted() {
      deletions.inc({ backend });
    },
    failed(operation) {
      failures.inc({ backend, operation });
    },
  };
}
