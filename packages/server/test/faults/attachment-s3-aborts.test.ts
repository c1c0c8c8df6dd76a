/**
 * Incomplete S3 multipart uploads (issue 37, item 3) against a service that implements
 * ListMultipartUploads and AbortMultipartUpload, which s3rver does not (attachment-limits.test.ts
 * checks against it what it can: the requests sent). That service is moto's server (`moto_server`,
 * Python's moto), when installed: it is not an npm or Debian package, so without it this file
 * skips with the reason printed.
 *
 * - an upload refused mid-stream (413) or abandoned by its client leaves no multipart upload;
 * - the sweeper aborts stale incomplete uploads under this server's folders, but not those of work
 *   under way (a fresh journal note) nor those outside its folders.
 */
import { type ChildProcess, execFileSync, spawn } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { connect, createServer } from 'node:net';
import {
  CreateBucketCommand,
  CreateMultipartUploadCommand,
  ListMultipartUploadsCommand,
  S3Client,
  UploadPartCommand,
} from '@aws-sdk/client-s3';
import { request } from 'undici';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createFileBackend } from '../../src/attachments/index.js';
import { Journal } from '../../src/attachments/journal.js';
import { basicAuth, testSettings, useEmbeddedStore } from '../helpers/embedded-server.js';
import { listen } from './protocol.js';

const AUTH = basicAuth('alice');
const MB = 1024 * 1024;

function motoMissing(): string | undefined {
  try {
    execFileSync('moto_server', ['--help'], { stdio: 'ignore', timeout: 30_000 });
    return undefined;
  } catch {
    return 'moto_server (Python moto) is not installed';
  }
}
const skipReason = motoMissing();
if (skipReason) console.warn(`attachment-s3-aborts.test.ts: skipped: ${skipReason}`);

async function freePort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as { port: number };
  await new Promise((resolve) => server.close(resolve));
  return port;
}

describe.skipIf(skipReason !== undefined)(
  'S3 multipart uploads on a service that lists them (moto)',
  { timeout: 120_000 },
  () => {
    const store = useEmbeddedStore();
    let moto: ChildProcess;
    let endpoint: string;
    let client: S3Client;
    let base: string;
    let port: number;
    const bucket = 'quire-moto';
    const settings = () => ({
      attachment_enabled: true,
      attachment_sweep_interval_seconds: 0,
      attachment_extensions: 'any',
      attachment_max_size: 6 * MB,
      attachment_upload_idle_timeout_seconds: 1,
      attachment_aws_bucket_name: bucket,
      attachment_aws_endpoint_url: endpoint,
      attachment_aws_use_path_style: true,
      attachment_aws_access_key: 'test',
      attachment_aws_secret_key: 'test',
    });
    const pending = async (prefix = '') =>
      ((await client.send(new ListMultipartUploadsCommand({ Bucket: bucket, Prefix: prefix }))).Uploads ?? []).map(
        (upload) => upload.Key,
      );

    beforeAll(async () => {
      const motoPort = await freePort();
      moto = spawn('moto_server', ['-H', '127.0.0.1', '-p', String(motoPort)], { stdio: 'ignore' });
      endpoint = `http://127.0.0.1:${motoPort}`;
      for (let tries = 0; ; tries++) {
        const up = await fetch(endpoint).then(
          () => true,
          () => false,
        );
        if (up) break;
        if (tries > 300) throw new Error('moto_server did not start');
        await new Promise((resolve) => setTimeout(resolve, 100));
      }
      client = new S3Client({
        endpoint,
        region: 'us-east-1',
        forcePathStyle: true,
        credentials: { accessKeyId: 'test', secretAccessKey: 'test' },
        requestChecksumCalculation: 'WHEN_REQUIRED',
        responseChecksumValidation: 'WHEN_REQUIRED',
      });
      await client.send(new CreateBucketCommand({ Bucket: bucket }));
      const app = await store.serverWith(settings());
      port = await listen(app);
      base = `http://127.0.0.1:${port}`;
      for (const path of ['/v1/buckets/b', '/v1/buckets/b/collections/c']) {
        const response = await request(`${base}${path}`, { method: 'PUT', headers: AUTH });
        await response.body.text();
      }
    }, 60_000);
    afterAll(() => {
      client?.destroy();
      moto?.kill('SIGTERM');
    });

    /** Sends more than a part in chunks, then ends the body or goes away. */
    function bigUpload(record: string, bytes: number, then: 'finish' | 'close'): Promise<string> {
      return new Promise((resolve) => {
        const socket = connect(port, '127.0.0.1');
        let answer = '';
        socket.on('data', (chunk) => (answer += chunk.toString()));
        socket.on('close', () => resolve(answer));
        socket.on('error', () => resolve(answer));
        socket.write(
          `POST /v1/buckets/b/collections/c/records/${record}/attachment HTTP/1.1\r\nHost: 127.0.0.1\r\n` +
            `Authorization: ${AUTH.authorization}\r\nContent-Type: multipart/form-data; boundary=x\r\n` +
            'Transfer-Encoding: chunked\r\n\r\n',
        );
        const send = (data: Buffer | string) => {
          socket.write(`${Buffer.byteLength(data).toString(16)}\r\n`);
          socket.write(data);
          return socket.write('\r\n');
        };
        send('--x\r\nContent-Disposition: form-data; name="attachment"; filename="big.bin"\r\n\r\n');
        const chunk = Buffer.alloc(256 * 1024, 7);
        let sent = 0;
        const pump = () => {
          while (sent < bytes) {
            sent += chunk.length;
            if (!send(chunk)) return void socket.once('drain', pump);
          }
          if (then === 'finish') socket.write('0\r\n\r\n');
          else setTimeout(() => socket.destroy(), 300);
        };
        pump();
      });
    }

    it('a 413 mid-stream and an abandoned upload leave no multipart upload', async () => {
      expect((await bigUpload('over', 12 * MB, 'finish')).split('\r\n')[0]).toBe('HTTP/1.1 413 Payload Too Large');
      await bigUpload('gone', 5.5 * MB, 'close');
      await expect.poll(() => pending('b/'), { timeout: 10_000 }).toEqual([]);
    });

    it('the sweeper aborts stale uploads under its folders, not work under way nor others', async () => {
      const begin = async (key: string) => {
        const { UploadId } = await client.send(new CreateMultipartUploadCommand({ Bucket: bucket, Key: key }));
        await client.send(
          new UploadPartCommand({ Bucket: bucket, Key: key, UploadId, PartNumber: 1, Body: Buffer.alloc(1024) }),
        );
      };
      const stale = `b/c/${randomUUID()}.bin`;
      const busy = `b/c/${randomUUID()}.bin`;
      const elsewhere = `other/${randomUUID()}.bin`;
      for (const key of [stale, busy, elsewhere]) await begin(key);
      await new Promise((resolve) => setTimeout(resolve, 2_500)); // older than the grace period below
      const backend = await createFileBackend(testSettings(settings()));
      const journal = new Journal(backend, store.storage, {
        graceMs: 2_000,
        log: () => undefined,
        uploadPrefixes: ['b/'],
      });
      try {
        // An upload under way at `busy`: its note is fresh.
        const intent = await journal.announce([
          { location: busy, collection: '/buckets/b/collections/c', record: 'r' },
        ]);
        await journal.sweep();
        expect((await pending()).sort()).toEqual([busy, elsewhere].sort());
        await intent.done();
      } finally {
        await backend.close();
      }
    });
  },
);
