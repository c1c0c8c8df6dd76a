/**
 * The limits of an upload and how it ends (issue 36 item 10, issue 37 item 3), over real sockets,
 * on local files and on a real S3-compatible server (s3rver):
 * - a trickle that is never idle is cut by the least rate, a steady upload by the deadline (408);
 * - a refusal decided before the body is read reaches a client that writes its whole body first
 *   (curl, Python's requests) as that answer, not a reset connection (the lingering close);
 * - 10 concurrent uploads to one new record: none answered 5xx, one file kept (both stores);
 * - on S3, every failure path after a multipart upload began (413 mid-stream, the client gone,
 *   the client silent) sends AbortMultipartUpload for it, seen on the wire by a recording proxy
 *   in front of s3rver; the sweeper asks for the stale ones (ListMultipartUploads).
 *
 * s3rver (3.7) implements neither AbortMultipartUpload (it answers 405) nor ListMultipartUploads
 * (501): what is checked against it is that Quire sends them, with the right upload id and key,
 * that a service refusing them fails nothing (the upload's own answer stands, the sweep goes on
 * and says once that it cannot list), and that no object is left.
 */
import { createServer, request as httpRequest, type Server } from 'node:http';
import { connect } from 'node:net';
import { Readable } from 'node:stream';
import { request } from 'undici';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createFileBackend } from '../../src/attachments/index.js';
import { Journal } from '../../src/attachments/journal.js';
import { FILE_BACKENDS, useFileStore } from '../helpers/attachments.js';
import { describeOnBackends } from '../helpers/backends.js';
import { basicAuth, testSettings, useEmbeddedStore } from '../helpers/embedded-server.js';
import { startS3Server, type S3Server } from '../helpers/s3.js';
import { listen } from './protocol.js';

const AUTH = basicAuth('alice');
const MB = 1024 * 1024;

async function setUp(base: string) {
  for (const path of ['/v1/buckets/b', '/v1/buckets/b/collections/c']) {
    const response = await request(`${base}${path}`, { method: 'PUT', headers: AUTH });
    await response.body.text();
  }
}

for (const fileBackend of FILE_BACKENDS) {
  describe(`upload limits, ${fileBackend} files`, { timeout: 60_000 }, () => {
    const files = useFileStore(fileBackend);
    const store = useEmbeddedStore();
    let base: string;
    let port: number;

    beforeAll(async () => {
      const app = await store.serverWith(
        files.settings({ attachment_upload_idle_timeout_seconds: 1, attachment_max_size: 64 * 1024 }),
      );
      port = await listen(app);
      base = `http://127.0.0.1:${port}`;
      await setUp(base);
    });

    async function nothingLeft(record: string) {
      expect(await files.list()).toEqual([]);
      expect(await files.notes()).toEqual([]);
      const response = await request(`${base}/v1/buckets/b/collections/c/records/${record}`, { headers: AUTH });
      await response.body.text();
      expect(response.statusCode).toBe(404);
    }

    it('a trickle (a byte every 100 ms: never idle) is cut by the least rate, 408, nothing left', async () => {
      const app = await store.serverWith(
        files.settings({ attachment_upload_idle_timeout_seconds: 1, attachment_upload_min_bytes_per_second: 1024 }),
      );
      const trickled = await listen(app);
      const started = performance.now();
      const answer = await new Promise<string>((resolve) => {
        const socket = connect(trickled, '127.0.0.1');
        const boundary = 'quire-trickle';
        const head = `--${boundary}\r\nContent-Disposition: form-data; name="attachment"; filename="a.jpg"\r\n\r\n`;
        let text = '';
        const timer = setInterval(() => socket.write('x'), 100);
        socket.on('data', (chunk) => (text += chunk.toString()));
        socket.on('close', () => {
          clearInterval(timer);
          resolve(text);
        });
        socket.on('error', () => {});
        socket.write(
          'POST /v1/buckets/b/collections/c/records/trickle/attachment HTTP/1.1\r\nHost: 127.0.0.1\r\n' +
            `Authorization: ${AUTH.authorization}\r\nContent-Type: multipart/form-data; boundary=${boundary}\r\n` +
            `Content-Length: ${head.length + 60_000}\r\n\r\n${head}`,
        );
      });
      const seconds = (performance.now() - started) / 1000;
      console.log(`[attachment trickle] ${fileBackend}: cut after ${seconds.toFixed(1)} s`);
      expect(answer).toMatch(/^HTTP\/1\.1 408 /);
      expect(answer).toContain('Less than 1024 bytes per second');
      expect(seconds).toBeLessThan(5);
      await nothingLeft('trickle');
    });

    it('a steady upload past the deadline is cut, 408, nothing left', async () => {
      const app = await store.serverWith(
        files.settings({
          attachment_upload_idle_timeout_seconds: 1,
          attachment_upload_deadline_seconds: 2,
          attachment_upload_min_bytes_per_second: 0,
        }),
      );
      const steady = await listen(app);
      const boundary = 'quire-steady';
      async function* body() {
        yield Buffer.from(
          `--${boundary}\r\nContent-Disposition: form-data; name="attachment"; filename="a.jpg"\r\n\r\n`,
        );
        for (let index = 0; index < 100; index++) {
          await new Promise((resolve) => setTimeout(resolve, 100));
          yield Buffer.alloc(1024, index);
        }
        yield Buffer.from(`\r\n--${boundary}--\r\n`);
      }
      const started = performance.now();
      const response = await request(
        `http://127.0.0.1:${steady}/v1/buckets/b/collections/c/records/steady/attachment`,
        {
          method: 'POST',
          headers: { ...AUTH, 'content-type': `multipart/form-data; boundary=${boundary}` },
          body: Readable.from(body()),
        },
      );
      const text = await response.body.text();
      expect(response.statusCode, text).toBe(408);
      expect(text).toContain('took longer than 2 s');
      expect((performance.now() - started) / 1000).toBeLessThan(6);
      await nothingLeft('steady');
    });

    it('uploads in progress per address: one more is 429, another address is served', async () => {
      const app = await store.serverWith(
        files.settings({
          attachment_uploads_max_per_address: 2,
          attachment_upload_idle_timeout_seconds: 10,
          attachment_upload_min_bytes_per_second: 0,
        }),
      );
      const slots = await listen(app);
      const boundary = 'quire-slots';
      const head = `--${boundary}\r\nContent-Disposition: form-data; name="attachment"; filename="a.png"\r\n\r\n`;
      const upload = (from: string, record: string, content: string | null) =>
        new Promise<{ answer: Promise<string>; end: () => void }>((resolve) => {
          const socket = connect({ port: slots, host: '127.0.0.1', localAddress: from });
          let text = '';
          const answer = new Promise<string>((done) => socket.on('close', () => done(text)));
          socket.on('data', (chunk) => (text += chunk.toString()));
          socket.on('error', () => {});
          const tail = content === null ? '' : `${content}\r\n--${boundary}--\r\n`;
          socket.write(
            `POST /v1/buckets/b/collections/c/records/${record}/attachment HTTP/1.1\r\nHost: 127.0.0.1\r\n` +
              `Authorization: ${AUTH.authorization}\r\nConnection: close\r\n` +
              `Content-Type: multipart/form-data; boundary=${boundary}\r\n` +
              `Content-Length: ${head.length + (content === null ? 10_000 : tail.length)}\r\n\r\n${head}${tail}`,
            () => resolve({ answer, end: () => socket.destroy() }),
          );
        });
      const held = [await upload('127.0.0.5', 'held0', null), await upload('127.0.0.5', 'held1', null)];
      await new Promise((resolve) => setTimeout(resolve, 300));
      const third = await (await upload('127.0.0.5', 'third', 'small')).answer;
      expect(third).toMatch(/^HTTP\/1\.1 429 /);
      expect(third).toContain('attachment_uploads_max_per_address');
      const elsewhere = await (await upload('127.0.0.6', 'elsewhere', 'small')).answer;
      expect(elsewhere).toMatch(/^HTTP\/1\.1 201 /);
      for (const { end } of held) end();
      await new Promise((resolve) => setTimeout(resolve, 300));
      // The slots are free again.
      expect(await (await upload('127.0.0.5', 'after', 'small')).answer).toMatch(/^HTTP\/1\.1 201 /);
      // Its files gone with its records, the store is as the other tests expect it.
      const slotsBase = `http://127.0.0.1:${slots}/v1/buckets/b/collections/c/records`;
      for (const record of ['elsewhere', 'after'])
        await (await request(`${slotsBase}/${record}`, { method: 'DELETE', headers: AUTH })).body.text();
      for (const record of ['held0', 'held1', 'third', 'elsewhere', 'after']) await nothingLeft(record);
    });

    it('a refusal decided before the body is read reaches the client as that answer, never a reset', async () => {
      /**
       * As curl or Python's requests do: the whole body written (with backpressure), then the
       * answer read. A socket closed with unread bytes resets: the writes fail (EPIPE,
       * ECONNRESET) and such a client never reads the answer.
       */
      const sendAll = (headers: string, size: number) =>
        new Promise<{ error: string | null; answer: string }>((resolve) => {
          const socket = connect(port, '127.0.0.1');
          let answer = '';
          let error: string | null = null;
          socket.on('data', (chunk) => (answer += chunk.toString()));
          socket.on('error', (failure: NodeJS.ErrnoException) => (error = failure.code ?? failure.message));
          socket.on('close', () => resolve({ error, answer }));
          socket.write(
            `POST /v1/buckets/b/collections/c/records/refused/attachment HTTP/1.1\r\nHost: 127.0.0.1\r\n${headers}\r\n`,
          );
          socket.write('--x\r\nContent-Disposition: form-data; name="attachment"; filename="big.jpg"\r\n\r\n');
          const chunk = Buffer.alloc(64 * 1024, 1);
          let sent = 0;
          const pump = () => {
            while (sent < size) {
              sent += chunk.length;
              if (!socket.write(chunk)) return void socket.once('drain', pump);
            }
            socket.end();
          };
          pump();
        });
      const size = 24 * MB;
      const type = 'Content-Type: multipart/form-data; boundary=x\r\n';
      const cases = [
        {
          headers: `Authorization: ${basicAuth('mallory').authorization}\r\n${type}Content-Length: ${size + 80}\r\n`,
          status: 403,
        },
        { headers: `Authorization: ${AUTH.authorization}\r\n${type}Content-Length: ${size + 80}\r\n`, status: 413 },
      ];
      for (const { headers, status } of cases) {
        for (let attempt = 0; attempt < 3; attempt++) {
          const { error, answer } = await sendAll(headers, size);
          expect(error, `${status}: the body was sent whole`).toBeNull();
          expect(answer).toMatch(new RegExp(`^HTTP/1\\.1 ${status} `));
          expect(answer.toLowerCase()).toContain('connection: close');
        }
      }
      await nothingLeft('refused');
    });
  });
}

describeOnBackends('10 concurrent uploads to one new record', { timeout: 120_000 }, ({ serverWith }) => {
  const files = useFileStore('local');

  it('none answered 5xx; the record holds one of the files, the only one kept', async () => {
    const app = await serverWith(files.settings());
    const base = `http://127.0.0.1:${await listen(app)}`;
    await setUp(base);
    const statuses: number[] = [];
    for (let round = 0; round < 5; round++) {
      const boundary = `quire-concurrent-${round}`;
      const answers = await Promise.all(
        Array.from({ length: 10 }, async (_, index) => {
          const body = Buffer.from(
            `--${boundary}\r\nContent-Disposition: form-data; name="attachment"; filename="f${index}.jpg"\r\n\r\n` +
              `file ${index}\r\n--${boundary}--\r\n`,
          );
          const response = await request(`${base}/v1/buckets/b/collections/c/records/new${round}/attachment`, {
            method: 'POST',
            headers: { ...AUTH, 'content-type': `multipart/form-data; boundary=${boundary}` },
            body,
          });
          const text = await response.body.text();
          return { status: response.statusCode, text };
        }),
      );
      statuses.push(...answers.map((answer) => answer.status));
      const failures = answers.filter((answer) => answer.status >= 500);
      expect(failures, JSON.stringify(failures.slice(0, 2))).toEqual([]);
      const record = await request(`${base}/v1/buckets/b/collections/c/records/new${round}`, { headers: AUTH });
      const held = ((await record.body.json()) as { data: { attachment: { location: string } } }).data.attachment;
      const kept = (await files.list()).filter((location) => location.startsWith('b/c/'));
      expect(kept).toContain(held.location);
    }
    // Each round's record holds one file; replaced ones were deleted.
    expect((await files.list()).filter((location) => location.startsWith('b/c/'))).toHaveLength(5);
    expect(statuses.filter((status) => status === 201)).toHaveLength(5);
    expect(await files.notes()).toEqual([]);
  });
});

/** An HTTP proxy in front of s3rver that records each request's method and URL (headers kept: signatures hold). */
async function recordingProxy(target: string): Promise<{ url: string; seen: string[]; close(): Promise<void> }> {
  const seen: string[] = [];
  const { hostname, port } = new URL(target);
  const server: Server = createServer((incoming, outgoing) => {
    seen.push(`${incoming.method} ${incoming.url}`);
    const forwarded = httpRequest(
      { hostname, port, method: incoming.method, path: incoming.url, headers: incoming.headers },
      (answer) => {
        outgoing.writeHead(answer.statusCode ?? 502, answer.headers);
        answer.pipe(outgoing);
      },
    );
    forwarded.on('error', () => outgoing.destroy());
    incoming.pipe(forwarded);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    url: `http://127.0.0.1:${(server.address() as { port: number }).port}`,
    seen,
    close: () => new Promise((resolve) => server.close(() => resolve())),
  };
}

describe('S3: a multipart upload that fails is aborted (recorded in front of s3rver)', { timeout: 120_000 }, () => {
  const store = useEmbeddedStore();
  let s3: S3Server;
  let proxy: Awaited<ReturnType<typeof recordingProxy>>;
  let base: string;
  let port: number;
  const settings = () => ({
    ...s3.settings,
    attachment_aws_endpoint_url: proxy.url,
    attachment_enabled: true,
    attachment_sweep_interval_seconds: 0,
    attachment_extensions: 'any',
    attachment_max_size: 6 * MB,
    attachment_upload_idle_timeout_seconds: 1,
  });

  beforeAll(async () => {
    s3 = await startS3Server();
    proxy = await recordingProxy(s3.endpoint);
    const app = await store.serverWith(settings());
    port = await listen(app);
    base = `http://127.0.0.1:${port}`;
    await setUp(base);
  });
  afterAll(async () => {
    await proxy?.close();
    await s3?.close();
  });

  /** The uploads begun for `record`'s files and the ids aborted, from the recorded requests. */
  function multipartOf(record: string) {
    const begun = proxy.seen.filter((line) => line.startsWith('POST ') && line.includes('?uploads'));
    const aborted = proxy.seen
      .filter((line) => line.startsWith('DELETE ') && line.includes('uploadId='))
      .map((line) => new URL(line.split(' ')[1] as string, 'http://x').searchParams.get('uploadId'));
    const parts = proxy.seen.filter((line) => line.startsWith('PUT ') && line.includes('uploadId='));
    const ids = new Set(
      parts.map((line) => new URL(line.split(' ')[1] as string, 'http://x').searchParams.get('uploadId')),
    );
    return { begun: begun.length, ids: [...ids], aborted, record };
  }

  /** Sends a 5 MiB part's worth and more, then `then` (the body left open, or the socket destroyed). */
  function bigUpload(record: string, bytes: number, then: 'wait' | 'close' | 'finish'): Promise<string> {
    return new Promise((resolve) => {
      const socket = connect(port, '127.0.0.1');
      const head = '--x\r\nContent-Disposition: form-data; name="attachment"; filename="big.bin"\r\n\r\n';
      let answer = '';
      socket.on('data', (chunk) => (answer += chunk.toString()));
      socket.on('close', () => resolve(answer));
      socket.on('error', () => resolve(answer));
      socket.write(
        `POST /v1/buckets/b/collections/c/records/${record}/attachment HTTP/1.1\r\nHost: 127.0.0.1\r\n` +
          `Authorization: ${AUTH.authorization}\r\n` +
          'Content-Type: multipart/form-data; boundary=x\r\nTransfer-Encoding: chunked\r\n\r\n',
      );
      const send = (data: Buffer | string) => {
        socket.write(`${Buffer.byteLength(data).toString(16)}\r\n`);
        socket.write(data);
        return socket.write('\r\n');
      };
      send(head);
      const chunk = Buffer.alloc(256 * 1024, 7);
      let sent = 0;
      const pump = () => {
        while (sent < bytes) {
          sent += chunk.length;
          if (!send(chunk)) return void socket.once('drain', pump);
        }
        if (then === 'close') setTimeout(() => socket.destroy(), 300);
        if (then === 'finish') socket.write('0\r\n\r\n');
      };
      pump();
    });
  }

  async function expectAborted(record: string, before: number) {
    for (let tries = 0; tries < 50 && multipartOf(record).aborted.length <= before; tries++)
      await new Promise((resolve) => setTimeout(resolve, 100));
    const { aborted, ids } = multipartOf(record);
    expect(aborted.length).toBe(before + 1);
    expect(ids).toContain(aborted.at(-1));
  }

  it('413 mid-stream, the client gone, the client silent: each sends AbortMultipartUpload for its upload', async () => {
    const over = await bigUpload('over', 12 * MB, 'finish');
    expect(over.split('\r\n')[0], over).toBe('HTTP/1.1 413 Payload Too Large');
    await expectAborted('over', 0);
    await bigUpload('gone', 5.5 * MB, 'close');
    await expectAborted('gone', 1);
    expect((await bigUpload('silent', 5.5 * MB, 'wait')).split('\r\n')[0]).toBe('HTTP/1.1 408 Request Timeout');
    await expectAborted('silent', 2);
    expect(multipartOf('').begun).toBe(3);
    // s3rver keeps the parts (it refuses the abort with 405), but no object is left.
    const keys = proxy.seen.filter((line) => line.startsWith('POST ') && line.includes('?uploadId=')); // completions
    expect(keys).toEqual([]);
    for (const record of ['over', 'gone', 'silent']) {
      const response = await request(`${base}/v1/buckets/b/collections/c/records/${record}`, { headers: AUTH });
      await response.body.text();
      expect(response.statusCode).toBe(404);
    }
  });

  it('the sweeper asks for stale multipart uploads; a service unable to list them fails nothing', async () => {
    const warnings: string[] = [];
    const log = { warn: (message: string) => warnings.push(message), info: () => {} };
    const backend = await createFileBackend(testSettings(settings()), () => log as never);
    const journal = new Journal(backend, store.storage, {
      graceMs: 10_000,
      log: () => log as never,
      uploadPrefixes: [''],
    });
    try {
      const listed = () => proxy.seen.filter((line) => line.startsWith('GET ') && /[?&]uploads(=|&|$)/.test(line));
      await journal.sweep();
      await journal.sweep();
      expect(listed()).toHaveLength(1);
      expect(warnings).toHaveLength(1);
      expect(warnings[0]).toContain('cannot list multipart uploads');
    } finally {
      await backend.close();
    }
  });
});
