/** The shapes of dumps (dump.ts), apart so that code loaded on first use (export.ts) can share them. */
import type { RemoteRecord } from '../store/types.js';

export interface Dump {
  bucket?: string;
  collection?: string;
  /** The collection's timestamp (ETag) when the dump was made. */
  timestamp?: number | null;
  data: RemoteRecord[];
}

/** A dump, or the bare array of records the original client's `importBulk` takes. */
export type DumpInput = Dump | RemoteRecord[];

export interface ExportOptions {
  /** Records per request (default 10,000; the server may cap it). */
  pageSize?: number;
  signal?: AbortSignal;
  /** After each page: records so far. */
  onProgress?: (received: number) => void;
}
