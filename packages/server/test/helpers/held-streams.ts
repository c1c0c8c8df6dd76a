/**
 * Change streams held open from chosen loopback addresses (127.0.0.2, 127.0.0.3…: on Linux the
 * whole 127/8 is loopback), so that the server sees distinct clients as it would distinct hosts.
 * node:http without keep-alive: each stream is its own connection, closed with it.
 */
import { request } from 'node:http';

export const MONITOR = '/v1/buckets/monitor/collections/changes/records';

export interface HeldStream {
  status: number;
  /** The refusal's parsed body (undefined for an open stream). */
  body: unknown;
  retryAfter: string | undefined;
  /** Resolves when the server ends an open stream (or the connection closes). */
  ended: Promise<void>;
  /** Whether the server ended it. */
  readonly isEnded: boolean;
  close(): void;
}

/** Opens the change stream of `origin` (`http://127.0.0.1:<port>`) from `localAddress`; resolves once answered. */
export function holdStream(
  origin: string,
  localAddress: string,
  headers: Record<string, string> = {},
): Promise<HeldStream> {
  return new Promise((resolve, reject) => {
    const outgoing = request(
      `${origin}${MONITOR}`,
      { agent: false, localAddress, headers: { ...headers, Accept: 'text/event-stream' } },
      (response) => {
        const status = response.statusCode ?? 0;
        const retryAfter = response.headers['retry-after'] as string | undefined;
        let isEnded = false;
        const ended = new Promise<void>((done) => {
          const end = () => {
            isEnded = true;
            done();
          };
          response.once('end', end);
          response.once('close', end);
          response.once('error', end);
        });
        const held = (body: unknown): HeldStream => ({
          status,
          body,
          retryAfter,
          ended,
          get isEnded() {
            return isEnded;
          },
          close: () => outgoing.destroy(),
        });
        if (status === 200) {
          response.resume();
          resolve(held(undefined));
          return;
        }
        let text = '';
        response.setEncoding('utf8');
        response.on('data', (chunk: string) => (text += chunk));
        response.on('end', () => resolve(held(text === '' ? undefined : JSON.parse(text))));
      },
    );
    outgoing.on('error', reject);
    outgoing.end();
  });
}
