/**
 * A real S3-compatible server for tests and benches: the npm `s3rver` package, started on a free
 * port with its data in a temporary directory, and a bucket created in it. Never a mock: the
 * server speaks the S3 protocol the AWS SDK speaks to AWS (multipart uploads, ranges, presigned
 * URLs).
 */
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { S3Client } from '@aws-sdk/client-s3';
import S3rver from 's3rver';
import type { Settings } from '../../src/config.js';

export interface S3Server {
  endpoint: string;
  bucket: string;
  /** The settings that put a Quire server's attachments in this bucket. */
  settings: Partial<Settings>;
  close(): Promise<void>;
}

/** Lets any origin read the bucket's objects (a browser app fetching files from `base_url`). */
const READABLE_FROM_ANYWHERE =
  '<CORSConfiguration><CORSRule><AllowedOrigin>*</AllowedOrigin><AllowedMethod>GET</AllowedMethod>' +
  '<AllowedMethod>HEAD</AllowedMethod><AllowedHeader>*</AllowedHeader></CORSRule></CORSConfiguration>';

export async function startS3Server(bucket = 'quire-files', options: { cors?: boolean } = {}): Promise<S3Server> {
  const directory = await mkdtemp(join(tmpdir(), 'quire-s3-'));
  const server = new S3rver({
    port: 0,
    address: '127.0.0.1',
    silent: true,
    directory,
    configureBuckets: [{ name: bucket, configs: options.cors ? [READABLE_FROM_ANYWHERE] : [] }],
  });
  const { port } = await server.run();
  const endpoint = `http://127.0.0.1:${port}`;
  return {
    endpoint,
    bucket,
    settings: {
      attachment_aws_bucket_name: bucket,
      attachment_aws_endpoint_url: endpoint,
      attachment_aws_use_path_style: true,
      attachment_aws_access_key: 'S3RVER',
      attachment_aws_secret_key: 'S3RVER',
    },
    async close() {
      await server.close();
      await rm(directory, { recursive: true, force: true });
    },
  };
}

/** An AWS SDK client of the test server, to see its objects from outside Quire. */
export function s3Client(server: Pick<S3Server, 'endpoint'>): S3Client {
  return new S3Client({
    endpoint: server.endpoint,
    region: 'us-east-1',
    forcePathStyle: true,
    credentials: { accessKeyId: 'S3RVER', secretAccessKey: 'S3RVER' },
    requestChecksumCalculation: 'WHEN_REQUIRED',
    responseChecksumValidation: 'WHEN_REQUIRED',
  });
}
