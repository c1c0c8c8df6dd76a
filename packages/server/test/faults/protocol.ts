/**
 * What every error must look like (protocol-reference §1.1), and requests written byte by byte
 * on a socket: malformed HTTP that no client library would send.
 */
import { connect, type AddressInfo } from 'node:net';
import type { FastifyInstance } from 'fastify';

/** Listens on 127.0.0.1 (port 0) and returns the port. */
export async function listen(app: FastifyInstance): Promise<number> {
  await app.listen({ host: '127.0.0.1', port: 0 });
  return (app.server.address() as AddressInfo).port;
}

/** The errno table of protocol-reference §1.2. */
export const ERRNOS: ReadonlySet<number> = new Set([
  104, 105, 106, 107, 108, 109, 110, 111, 112, 113, 114, 115, 116, 117, 121, 122, 201, 202, 999,
]);
const ERROR_KEYS: ReadonlySet<string> = new Set(['code', 'errno', 'error', 'message', 'info', 'details']);

/** Why `body` (text) is not a protocol error body of `status`, or null when it is one. */
export function protocolErrorProblem(status: number, body: string): string | null {
  let parsed: unknown;
  try {
    parsed = JSON.parse(body);
  } catch {
    return `not JSON: ${JSON.stringify(body.slice(0, 120))}`;
  }
  if (parsed === null || typeof parsed !== 'object' || Array.isArray(parsed))
    return `not an object: ${body.slice(0, 120)}`;
  const error = parsed as Record<string, unknown>;
  const extra = Object.keys(error).filter((key) => !ERROR_KEYS.has(key));
  if (extra.length > 0) return `unexpected keys ${extra.join(', ')}: ${body.slice(0, 200)}`;
  if (error.code !== status) return `code ${String(error.code)} is not the status ${status}`;
  if (typeof error.errno !== 'number' || !ERRNOS.has(error.errno))
    return `errno ${String(error.errno)} is not in the table`;
  if (typeof error.error !== 'string' || error.error === '') return 'no error text';
  if (error.message !== undefined && typeof error.message !== 'string') return 'message is not a string';
  return null;
}

export interface RawResponse {
  status: number;
  headers: Record<string, string>;
  body: string;
}

/**
 * Writes `request` as is on a new connection and reads one response (the server closes the
 * connection, or Content-Length says where it ends). Rejects after `timeoutMs`: a hang.
 */
export function rawRequest(port: number, request: string | Buffer, timeoutMs = 10_000): Promise<RawResponse> {
  return new Promise((resolve, reject) => {
    const socket = connect(port, '127.0.0.1');
    const chunks: Buffer[] = [];
    let settled = false;
    const finish = (error?: Error) => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      socket.destroy();
      if (error) return reject(error);
      const response = parseResponse(Buffer.concat(chunks));
      if (response) resolve(response);
      else
        reject(
          new Error(
            `no complete HTTP response: ${JSON.stringify(Buffer.concat(chunks).toString('latin1').slice(0, 200))}`,
          ),
        );
    };
    const timer = setTimeout(() => finish(new Error(`no answer within ${timeoutMs} ms`)), timeoutMs);
    socket.on('data', (chunk: Buffer) => {
      chunks.push(chunk);
      if (parseResponse(Buffer.concat(chunks), true)) finish();
    });
    // A reset after the answer was written still leaves the answer readable.
    socket.on('error', () => finish());
    socket.on('close', () => finish());
    socket.write(request);
  });
}

/** The response in `data`, or null while incomplete (`strict`: Content-Length bytes must be there). */
function parseResponse(data: Buffer, strict = false): RawResponse | null {
  const text = data.toString('latin1');
  const end = text.indexOf('\r\n\r\n');
  if (end === -1) return null;
  const [statusLine = '', ...lines] = text.slice(0, end).split('\r\n');
  const match = /^HTTP\/1\.[01] (\d{3})/.exec(statusLine);
  if (!match) return null;
  const headers: Record<string, string> = {};
  for (const line of lines) {
    const colon = line.indexOf(':');
    if (colon > 0) headers[line.slice(0, colon).trim().toLowerCase()] = line.slice(colon + 1).trim();
  }
  const bodyBytes = data.subarray(Buffer.byteLength(text.slice(0, end + 4), 'latin1'));
  const length = headers['content-length'] === undefined ? undefined : Number(headers['content-length']);
  if (strict && (length === undefined || bodyBytes.length < length)) return null;
  const body = (length === undefined ? bodyBytes : bodyBytes.subarray(0, length)).toString('utf8');
  return { status: Number(match[1]), headers, body };
}
