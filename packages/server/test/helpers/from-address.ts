/**
 * Real HTTP requests to a listening server from chosen loopback addresses (127.0.0.2, 127.0.0.3…:
 * on Linux the whole 127/8 is loopback), so that the server sees distinct client addresses as it
 * would from distinct hosts. One keep-alive connection pool per address.
 */
import { Agent, request, type IncomingHttpHeaders } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { FastifyInstance } from 'fastify';

export interface Answer<Body = unknown> {
  status: number;
  headers: IncomingHttpHeaders;
  /** The parsed body (the text when it is not JSON), of the type the caller expects: nothing checks it. */
  json: Body;
  /** Wall time from sending the request to the end of the response, in milliseconds. */
  ms: number;
}

export interface SendOptions {
  headers?: Record<string, string>;
  body?: unknown;
}

export interface Client {
  send<Body = unknown>(method: string, path: string, options?: SendOptions): Promise<Answer<Body>>;
  close(): void;
}

/** Listens on 127.0.0.1 (port 0) and returns the port. */
export async function listen(app: FastifyInstance): Promise<number> {
  await app.listen({ host: '127.0.0.1', port: 0 });
  return (app.server.address() as AddressInfo).port;
}

/** `sockets`: connections used at once (1: requests one after another). */
export function clientFrom(localAddress: string, port: number, sockets = 1): Client {
  const agent = new Agent({ keepAlive: true, maxSockets: sockets, localAddress });
  return {
    send<Body>(method: string, path: string, options: SendOptions = {}): Promise<Answer<Body>> {
      const payload = options.body === undefined ? undefined : JSON.stringify(options.body);
      const headers: Record<string, string> = { ...options.headers };
      if (payload !== undefined) headers['content-type'] = 'application/json';
      return new Promise((resolve, reject) => {
        const started = performance.now();
        const outgoing = request({ host: '127.0.0.1', port, method, path, headers, agent }, (response) => {
          const chunks: Buffer[] = [];
          response.on('data', (chunk: Buffer) => chunks.push(chunk));
          response.on('end', () => {
            const ms = performance.now() - started;
            const text = Buffer.concat(chunks).toString('utf8');
            let json: unknown;
            try {
              json = text === '' ? undefined : JSON.parse(text);
            } catch {
              json = text;
            }
            resolve({ status: response.statusCode ?? 0, headers: response.headers, json: json as Body, ms });
          });
          response.on('error', reject);
        });
        outgoing.on('error', reject);
        outgoing.end(payload);
      });
    },
    close() {
      agent.destroy();
    },
  };
}

export function basic(user: string, password: string): Record<string, string> {
  return { authorization: `Basic ${Buffer.from(`${user}:${password}`, 'utf8').toString('base64')}` };
}
