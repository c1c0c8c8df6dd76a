/**
 * The console's way to the server: `@quire/client`'s remote API (`@quire/client/admin`), over the
 * public Kinto protocol with the signed-in user's `Authorization` header, nothing else. Nothing
 * here is specific to Quire, so the console also manages any deployment that allows its origin.
 *
 * `credentials: 'omit'`: the header is sent explicitly, and a 401 with `WWW-Authenticate: Basic`
 * must not make the browser open its own password prompt.
 */
import {
  type AdminRemote,
  createAdminRemote,
  type ErrorBody,
  type FetchLike,
  NetworkError,
  ServerError,
  SyncAbortedError,
  TimeoutError,
} from '@quire/client/admin';

export type { AdminRemote };

const consoleFetch: FetchLike = (input, init) => fetch(input, { ...init, credentials: 'omit', cache: 'no-store' });

/** The remote API as the user whose `Authorization` header this is (null: anonymous). */
export function connect(server: string, authorization: string | null): AdminRemote {
  return createAdminRemote({
    remote: server,
    fetch: consoleFetch,
    ...(authorization ? { auth: { type: 'header', value: authorization } } : {}),
  });
}

/** The server root, always ending with `/v1` (no slash): `http://h:8888/v1/` → `http://h:8888/v1`. */
export function normaliseServerUrl(input: string): string {
  let url = input.trim();
  if (!/^https?:\/\//i.test(url)) url = `http://${url}`;
  url = url.replace(/\/+$/, '');
  if (!/\/v1$/.test(url)) url = `${url}/v1`;
  return url;
}

/** The HTTP status of a failed request: 0 when the server could not be reached. */
export function statusOf(error: unknown): number | undefined {
  if (error instanceof ServerError) return error.status;
  if (error instanceof NetworkError || error instanceof TimeoutError) return 0;
  return undefined;
}

/** A request abandoned on purpose (the page moved on): not an error to show. */
export function isAbort(error: unknown): boolean {
  return error instanceof SyncAbortedError || (error as Error | null)?.name === 'AbortError';
}

/** What to tell a person: the server's message, with the field it names (§1 error body). */
export function explain(error: unknown, server?: string): string {
  if (error instanceof ServerError) {
    const body = (typeof error.body === 'object' && error.body !== null ? error.body : {}) as ErrorBody;
    const details = body.details as { description?: string; name?: string }[] | undefined;
    const first = Array.isArray(details) ? details[0] : undefined;
    if (error.status === 400 && first?.description) return `${first.name ? `${first.name}: ` : ''}${first.description}`;
    if (body.message) return body.message;
    return `${error.status} error${typeof error.body === 'string' ? `: ${error.body.slice(0, 200)}` : ''}`;
  }
  if (error instanceof NetworkError || error instanceof TimeoutError) {
    const where = server ? ` at ${server}` : '';
    return `Cannot reach the server${where} (${error.message}). Is it running, and does it allow this origin (CORS)?`;
  }
  return error instanceof Error ? error.message : String(error);
}

/** Any thrown value as an Error, for the pages' error states. */
export function asError(error: unknown): Error {
  return error instanceof Error ? error : new Error(String(error));
}
