/**
 * Issue 19 item 7: every error answers the protocol's body `{code, errno, error, message}`,
 * whatever layer raises it: Node's HTTP parser (headers or URL too large, unknown method,
 * malformed request, a missing Host, an unknown Expect), Fastify, or the JSON parser (a body
 * nested 10,000 deep used to read "Object contains forbidden prototype property"). Real HTTP,
 * written byte by byte on a socket.
 */
import { beforeAll, describe, expect, it } from 'vitest';
import { basicAuth, useEmbeddedStore } from '../helpers/embedded-server.js';
import { listen, protocolErrorProblem, rawRequest, type RawResponse } from './protocol.js';

const AUTH = basicAuth('alice').authorization;

function expectProtocolError(response: RawResponse, status: number, errno: number, message?: RegExp): void {
  expect(response.status, response.body).toBe(status);
  expect(protocolErrorProblem(status, response.body)).toBeNull();
  const body = JSON.parse(response.body) as { errno: number; message?: string };
  expect(body.errno).toBe(errno);
  if (message) expect(body.message).toMatch(message);
  expect(response.headers['content-type']).toMatch(/^application\/json/);
}

function get(path: string, headers = ''): string {
  return `GET ${path} HTTP/1.1\r\nHost: 127.0.0.1\r\n${headers}Connection: close\r\n\r\n`;
}

function put(path: string, body: string): string {
  return (
    `PUT ${path} HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: ${AUTH}\r\nContent-Type: application/json\r\n` +
    `Content-Length: ${Buffer.byteLength(body)}\r\nConnection: close\r\n\r\n${body}`
  );
}

/** `{"data": {"a": [[[…]]]}}` with `depth` levels in all. */
function nested(depth: number): string {
  return `{"data":{"a":${'['.repeat(depth - 2)}${']'.repeat(depth - 2)}}}`;
}

describe('errors in the protocol format, from every layer (issue 19.7)', { timeout: 60_000 }, () => {
  const { serverWith } = useEmbeddedStore();
  let port: number;

  beforeAll(async () => {
    port = await listen(await serverWith());
  });

  it('431 for headers past max_header_bytes', async () => {
    const response = await rawRequest(port, get('/v1/', `X-Big: ${'a'.repeat(20_000)}\r\n`));
    expectProtocolError(response, 431, 113, /max_header_bytes \(16384 bytes\)/);
  });

  it('431 for a very long URL or in_ list', async () => {
    expectProtocolError(await rawRequest(port, get(`/v1/buckets/${'b'.repeat(20_000)}`)), 431, 113, /max_header_bytes/);
    const ids = Array.from({ length: 4_000 }, (_, index) => `id${index}`).join(',');
    expectProtocolError(await rawRequest(port, get(`/v1/buckets?in_id=${ids}`)), 431, 113, /max_header_bytes/);
  });

  it('max_header_bytes is a setting', async () => {
    const roomy = await listen(await serverWith({ max_header_bytes: 64 * 1024 }));
    const response = await rawRequest(roomy, get('/v1/', `X-Big: ${'a'.repeat(20_000)}\r\n`));
    expect(response.status).toBe(200);
    // 4096 is about the least that still fits a record URL of three 256-byte ids (checked at start).
    const tight = await listen(await serverWith({ max_header_bytes: 4096 }));
    expectProtocolError(
      await rawRequest(tight, get('/v1/', `X-Big: ${'a'.repeat(5_000)}\r\n`)),
      431,
      113,
      /max_header_bytes \(4096 bytes\)/,
    );
  });

  it('405 for a method the HTTP parser does not know', async () => {
    const response = await rawRequest(port, 'FOO /v1/ HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n');
    expectProtocolError(response, 405, 115, /Method not allowed/);
  });

  it('405 for CONNECT, which Node would close unanswered', async () => {
    expectProtocolError(
      await rawRequest(port, 'CONNECT 127.0.0.1:443 HTTP/1.1\r\nHost: 127.0.0.1:443\r\n\r\n'),
      405,
      115,
    );
  });

  it('400 for a malformed request', async () => {
    expectProtocolError(await rawRequest(port, 'garbage\r\n\r\n'), 400, 107, /Malformed HTTP request/);
    expectProtocolError(await rawRequest(port, 'GET /v1/ HTTP/1.1\r\nHost: x\r\nBad Header: 1\r\n\r\n'), 400, 107);
    expectProtocolError(
      await rawRequest(port, 'GET /v1/ HTTP/1.1\r\nHost: x\r\nContent-Length: 1\r\nContent-Length: 2\r\n\r\n'),
      400,
      107,
    );
    const chunked = 'POST /v1/batch HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n';
    expectProtocolError(await rawRequest(port, chunked), 400, 107);
  });

  it('417 in the protocol format for an Expect the server does not meet', async () => {
    expectProtocolError(await rawRequest(port, get('/v1/', 'Expect: something-else\r\n')), 417, 107, /Expect/);
  });

  it('400 naming max_json_depth for a body nested 10,000 deep, not a prototype complaint', async () => {
    const response = await rawRequest(port, put('/v1/buckets/deep', nested(10_000)));
    expectProtocolError(response, 400, 107, /max_json_depth \(100\)/);
    expect(response.body).not.toMatch(/prototype/);
  });

  it('max_json_depth is a setting; a body at the limit is accepted', async () => {
    expect((await rawRequest(port, put('/v1/buckets/deep', nested(100)))).status).toBe(201);
    expectProtocolError(await rawRequest(port, put('/v1/buckets/deep', nested(101))), 400, 107, /max_json_depth/);
    const shallow = await listen(await serverWith({ max_json_depth: 10 }));
    expectProtocolError(
      await rawRequest(shallow, put('/v1/buckets/deep', nested(11))),
      400,
      107,
      /max_json_depth \(10\)/,
    );
  });

  it('still refuses prototype keys, at any depth', async () => {
    for (const body of ['{"data":{"__proto__":{"x":1}}}', '{"data":{"a":[{"constructor":{"prototype":{"x":1}}}]}}']) {
      expectProtocolError(
        await rawRequest(port, put('/v1/buckets/proto', body)),
        400,
        107,
        /forbidden prototype property/,
      );
    }
    expect(({} as Record<string, unknown>).x).toBeUndefined();
  });
});
