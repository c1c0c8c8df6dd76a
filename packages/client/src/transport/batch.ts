/** `POST /batch`, split into chunks of the server's `batch_max_requests`. */
import type { HttpTransport } from './http.js';

export interface BatchRequest {
  method: 'GET' | 'HEAD' | 'POST' | 'PUT' | 'PATCH' | 'DELETE';
  path: string;
  headers?: Record<string, string>;
  body?: unknown;
}

export interface BatchResponse {
  status: number;
  path: string;
  headers: Record<string, string>;
  body: unknown;
}

export function chunk<T>(items: readonly T[], size: number | null): T[][] {
  const step = size && size > 0 ? size : items.length || 1;
  const chunks: T[][] = [];
  for (let i = 0; i < items.length; i += step) chunks.push(items.slice(i, i + step));
  return chunks;
}

/** Sends one chunk (at most `batch_max_requests` sub-requests). Sub-request paths are `/v1`-less. */
export async function sendBatch(
  http: HttpTransport,
  requests: readonly BatchRequest[],
  signal?: AbortSignal,
): Promise<BatchResponse[]> {
  if (requests.length === 0) return [];
  const response = await http.request<{ responses: BatchResponse[] }>({
    method: 'POST',
    path: '/batch',
    body: { requests },
    ...(signal ? { signal } : {}),
  });
  return response.body.responses;
}
