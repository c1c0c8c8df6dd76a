/** Exporting a collection as a dump (see dump.ts): code that only apps making dumps load. */
import { PreconditionFailedError } from '../errors.js';
import type { RemoteRecord } from '../store/types.js';
import { endpoints, quoteETag } from '../transport/endpoints.js';
import { type HttpResponse, type HttpTransport, parseETag } from '../transport/http.js';
import type { Dump, ExportOptions } from './types.js';

/**
 * Reads every record of a collection into a dump, consistently: pages follow Next-Page with
 * `If-Match` on the first page's ETag, and a change meanwhile (412) starts the reading over.
 */
export async function exportDump(
  http: HttpTransport,
  bucket: string,
  collection: string,
  options: ExportOptions = {},
): Promise<Dump> {
  const path = endpoints.records(bucket, collection);
  const signal = options.signal ? { signal: options.signal } : {};
  for (let attempt = 0; ; attempt++) {
    const data: RemoteRecord[] = [];
    let response: HttpResponse<{ data: RemoteRecord[] }> = await http.request({
      path,
      query: { _sort: '-last_modified', _limit: options.pageSize ?? 10_000 },
      ...signal,
    });
    const timestamp = parseETag(response.headers.get('etag'));
    try {
      for (;;) {
        data.push(...response.body.data);
        options.onProgress?.(data.length);
        const next = response.headers.get('next-page');
        if (!next) return { bucket, collection, timestamp, data };
        response = await http.request({
          path: next,
          headers: timestamp === null ? {} : { 'If-Match': quoteETag(timestamp) },
          ...signal,
        });
      }
    } catch (error) {
      if (!(error instanceof PreconditionFailedError) || attempt >= 10) throw error;
      // The collection changed while it was read: read it again.
    }
  }
}
