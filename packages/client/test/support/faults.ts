/** Fault injection: a loopback TCP proxy that can cut connections, and fetch interceptors. */
import { createServer, type Server, type Socket, connect } from 'node:net';
import type { FetchLike } from '../../src/index.js';

export interface CuttingProxy {
  url: string;
  /** Cuts the connection once, after `bytes` more bytes of response whose request matches `match`. */
  cutResponse(match: RegExp, bytes: number): void;
  /** Cuts happened so far. */
  cuts: number;
  close(): Promise<void>;
}

/**
 * Forwards TCP to the server and, when armed, destroys the client socket in the middle of the
 * response to the first request whose request line matches (the server still completes it).
 */
export async function startCuttingProxy(targetUrl: string): Promise<CuttingProxy> {
  const target = new URL(targetUrl);
  let armed: { match: RegExp; bytes: number } | null = null;
  const sockets = new Set<Socket>();
  const state = { cuts: 0 };
  const server: Server = createServer((client) => {
    sockets.add(client);
    const upstream = connect(Number(target.port), target.hostname);
    sockets.add(upstream);
    let cutting: { remaining: number } | null = null;
    client.on('data', (chunk) => {
      const line = chunk.toString('latin1').split('\r\n', 1)[0] ?? '';
      if (armed?.match.test(line)) {
        cutting = { remaining: armed.bytes };
        armed = null;
      }
      upstream.write(chunk);
    });
    upstream.on('data', (chunk) => {
      if (cutting) {
        if (chunk.length >= cutting.remaining) {
          client.write(chunk.subarray(0, cutting.remaining));
          state.cuts++;
          cutting = null;
          client.destroy();
          upstream.destroy();
          return;
        }
        cutting.remaining -= chunk.length;
      }
      client.write(chunk);
    });
    const end = () => {
      client.destroy();
      upstream.destroy();
      sockets.delete(client);
      sockets.delete(upstream);
    };
    client.on('error', end).on('close', end);
    upstream.on('error', end).on('close', end);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const address = server.address();
  if (!address || typeof address === 'string') throw new Error('proxy did not bind');
  return {
    url: `http://127.0.0.1:${address.port}${target.pathname}`,
    cutResponse(match, bytes) {
      armed = { match, bytes };
    },
    get cuts() {
      return state.cuts;
    },
    async close() {
      for (const socket of sockets) socket.destroy();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}

export interface Exchange {
  method: string;
  url: URL;
  status: number;
  records: number;
}

/** A fetch that records every exchange (and how many records each list page carried). */
export function recordingFetch(
  exchanges: Exchange[],
  inner: FetchLike = (input, init) => fetch(input, init),
): FetchLike {
  return async (input, init) => {
    const response = await inner(input, init);
    let records = 0;
    if (response.status === 200 && /\/records(\?|$)/.test(input) && init.method !== 'HEAD') {
      const body = (await response.clone().json()) as { data?: unknown[] };
      records = body.data?.length ?? 0;
    }
    exchanges.push({ method: init.method ?? 'GET', url: new URL(input), status: response.status, records });
    return response;
  };
}

/** Answers matching requests with a canned response instead of contacting the server. */
export function cannedResponse(
  status: number,
  headers: Record<string, string>,
  body: unknown = { code: status, errno: 201, error: 'Service Unavailable', message: 'injected' },
): Response {
  return new Response(status === 304 ? null : JSON.stringify(body), {
    status,
    headers: { 'Content-Type': 'application/json', ...headers },
  });
}
