/**
 * Errors raised before Fastify sees a request: Node's HTTP parser refuses it (request line and
 * headers past `max_header_bytes`, an unknown method, malformed syntax, a timeout), it carries
 * an Expect the server does not meet, or it is a CONNECT. Node and Fastify would answer `{error,
 * message, statusCode}`, an empty body, or close the connection without a word; these answer
 * the protocol's error body (§1.1) — on the raw socket where there is no response to reply through.
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Socket } from 'node:net';
import type { Duplex } from 'node:stream';
import type { HttpSettings } from './settings.js';
import { ApiError, ERRNO, methodNotAllowed, reasonPhrase } from '../errors.js';

/** The headers every API response carries (headers.ts), which these answers would miss. */
const SECURITY_HEADERS = {
  'X-Content-Type-Options': 'nosniff',
  'Content-Security-Policy': "default-src 'none'; frame-ancestors 'none'; base-uri 'none'; ",
};

/** A request line of the shape `METHOD target HTTP/1.x`: its method alone was refused. */
const REQUEST_LINE = /^[!#$%&'*+.^_`|~0-9A-Za-z-]+ \S+ HTTP\/1\.[01]\r?\n/;

/** What Node passes to `clientError` (Fastify types `rawPacket` loosely: it is a Buffer). */
type ParserError = Error & { code?: string; rawPacket?: unknown };

/** 431: the request line and headers past `max_header_bytes` (also a batch's sub-request: views/batch.ts). */
export function headersTooLarge(settings: Pick<HttpSettings, 'max_header_bytes'>): ApiError {
  return new ApiError(431, ERRNO.REQUEST_TOO_LARGE, {
    message: `Request line (URL) and headers are larger than max_header_bytes (${settings.max_header_bytes} bytes).`,
  });
}

function parserError(error: ParserError, settings: HttpSettings): ApiError {
  const { code } = error;
  switch (code) {
    case 'HPE_HEADER_OVERFLOW':
      return headersTooLarge(settings);
    case 'HPE_INVALID_METHOD': {
      // Any token is a method to HTTP, but not to Node's parser: answer as for a method the
      // route does not have. Bytes that are no request line at all are malformed.
      const packet = Buffer.isBuffer(error.rawPacket) ? error.rawPacket.subarray(0, 8192).toString('latin1') : '';
      if (REQUEST_LINE.test(packet)) return methodNotAllowed();
      break;
    }
    case 'ERR_HTTP_REQUEST_TIMEOUT':
      return new ApiError(408, ERRNO.INVALID_PARAMETERS, { message: 'The request was not received in time.' });
  }
  return new ApiError(400, ERRNO.INVALID_PARAMETERS, { message: `Malformed HTTP request${code ? ` (${code})` : ''}.` });
}

function rawResponse(error: ApiError): string {
  const body = JSON.stringify(error.toBody());
  const headers: Record<string, string | number> = {
    'Content-Type': 'application/json; charset=utf-8',
    'Content-Length': Buffer.byteLength(body),
    ...SECURITY_HEADERS,
    ...error.headers,
    Connection: 'close',
  };
  const lines = Object.entries(headers).map(([name, value]) => `${name}: ${value}`);
  return `HTTP/1.1 ${error.status} ${reasonPhrase(error.status)}\r\n${lines.join('\r\n')}\r\n\r\n${body}`;
}

/** Fastify's `clientErrorHandler`: the server's `clientError` event. */
export function createClientErrorHandler(settings: HttpSettings): (error: ParserError, socket: Socket) => void {
  return (error, socket) => {
    // A connection reset: nobody to answer.
    if (error.code === 'ECONNRESET' || socket.destroyed) return;
    // As Node does: no answer once a response has started on this connection.
    const current = (socket as { _httpMessage?: ServerResponse })._httpMessage;
    if (socket.writable && !current?.headersSent) socket.write(rawResponse(parserError(error, settings)));
    socket.destroy(error);
  };
}

/**
 * The server's `checkExpectation` event: an `Expect` other than `100-continue` (which Node
 * handles). Without a listener Node answers 417 with an empty body.
 */
export function refuseExpectation(request: IncomingMessage, response: ServerResponse): void {
  const error = new ApiError(417, ERRNO.INVALID_PARAMETERS, {
    message: `Expect: ${String(request.headers.expect).slice(0, 100)} is not supported (only 100-continue is).`,
  });
  const body = JSON.stringify(error.toBody());
  response.writeHead(417, {
    'Content-Type': 'application/json; charset=utf-8',
    'Content-Length': Buffer.byteLength(body),
    ...SECURITY_HEADERS,
  });
  response.end(body);
}

/** The server's `connect` event (method CONNECT): without a listener Node closes the connection unanswered. */
export function refuseConnect(_request: IncomingMessage, socket: Duplex): void {
  if (socket.writable) socket.write(rawResponse(methodNotAllowed()));
  socket.destroy();
}
