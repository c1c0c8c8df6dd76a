/**
 * Files in S3-compatible object storage (AWS S3, MinIO, Ceph, R2…), through the AWS SDK v3.
 * Uploads stream as a multipart upload (`@aws-sdk/lib-storage`): parts of 5 MiB (S3's smallest),
 * one in flight, so an upload of any size holds about two parts in memory; the object exists
 * only once the upload completes, and a failed or aborted one is aborted on the service (no
 * object, no parts kept). The SDK is loaded only when this backend is chosen.
 */
import type { Readable } from 'node:stream';
import type { S3Client } from '@aws-sdk/client-s3';
import type { AttachmentSettings } from './settings.js';
import { type ByteRange, type FileBackend, probe, type StoredFileInfo, type WriteOptions } from './backend.js';
import { isFileLocation } from './names.js';

const NOTES = '.quire/notes/';
/** S3's smallest part (all parts but the last). */
export const PART_SIZE = 5 * 1024 * 1024;

type Sdk = typeof import('@aws-sdk/client-s3');

/** The endpoint of the settings, if not AWS's own: `attachment_aws_endpoint_url`, else host/port/is_secure. */
export function s3Endpoint(settings: AttachmentSettings): string | null {
  if (settings.attachment_aws_endpoint_url) return settings.attachment_aws_endpoint_url.replace(/\/+$/, '');
  if (!settings.attachment_aws_host) return null;
  const scheme = settings.attachment_aws_is_secure ? 'https' : 'http';
  return `${scheme}://${settings.attachment_aws_host}${settings.attachment_aws_port ? `:${settings.attachment_aws_port}` : ''}`;
}

/** Where the bucket's objects are publicly reachable (the default `base_url` with S3). */
export function s3PublicUrl(settings: AttachmentSettings): string {
  const bucket = settings.attachment_aws_bucket_name as string;
  const endpoint = s3Endpoint(settings);
  if (endpoint && settings.attachment_aws_use_path_style) return `${endpoint}/${bucket}/`;
  if (endpoint) {
    const url = new URL(endpoint);
    return `${url.protocol}//${bucket}.${url.host}/`;
  }
  return `https://${bucket}.s3.${settings.attachment_aws_region}.amazonaws.com/`;
}

function isNotFound(error: unknown): boolean {
  const { name, $metadata } = error as { name?: string; $metadata?: { httpStatusCode?: number } };
  return name === 'NoSuchKey' || name === 'NotFound' || $metadata?.httpStatusCode === 404;
}

export class S3FileBackend implements FileBackend {
  readonly name = 's3';
  readonly #sdk: Sdk;
  readonly #client: S3Client;
  readonly #bucket: string;
  readonly #acl: string | null;

  private constructor(sdk: Sdk, client: S3Client, bucket: string, acl: string | null) {
    this.#sdk = sdk;
    this.#client = client;
    this.#bucket = bucket;
    this.#acl = acl;
  }

  static async create(settings: AttachmentSettings): Promise<S3FileBackend> {
    const sdk = await import('@aws-sdk/client-s3');
    const endpoint = s3Endpoint(settings);
    const client = new sdk.S3Client({
      region: settings.attachment_aws_region,
      forcePathStyle: settings.attachment_aws_use_path_style,
      ...(endpoint ? { endpoint } : {}),
      ...(settings.attachment_aws_access_key !== null && settings.attachment_aws_secret_key !== null
        ? {
            credentials: {
              accessKeyId: settings.attachment_aws_access_key,
              secretAccessKey: settings.attachment_aws_secret_key,
            },
          }
        : {}),
      // S3-compatible services often lack the SDK's newer integrity headers (checksums only where
      // S3 requires them) and `Expect: 100-continue`, which the SDK then waits for a second per part.
      ...(endpoint
        ? {
            requestChecksumCalculation: 'WHEN_REQUIRED' as const,
            responseChecksumValidation: 'WHEN_REQUIRED' as const,
            expectContinueHeader: false,
          }
        : {}),
    });
    const acl = settings.attachment_private ? null : settings.attachment_aws_acl;
    return new S3FileBackend(sdk, client, settings.attachment_aws_bucket_name as string, acl || null);
  }

  #key(location: string): string {
    if (!isFileLocation(location)) throw new Error(`not a file location: ${JSON.stringify(location)}`);
    return location;
  }

  async write(location: string, body: Readable, options: WriteOptions): Promise<void> {
    const { Upload } = await import('@aws-sdk/lib-storage');
    const upload = new Upload({
      client: this.#client,
      params: {
        Bucket: this.#bucket,
        Key: this.#key(location),
        Body: body,
        ContentType: options.contentType,
        ...(this.#acl ? { ACL: this.#acl as never } : {}),
      },
      partSize: PART_SIZE,
      queueSize: 1,
      // Aborted below, keeping the error that stopped it (lib-storage would report the abort's
      // own failure instead, e.g. on a service without AbortMultipartUpload).
      leavePartsOnError: true,
    });
    const abort = () => {
      body.destroy(options.signal.reason instanceof Error ? options.signal.reason : new Error('upload aborted'));
      void upload.abort().catch(() => {});
    };
    if (options.signal.aborted) abort();
    options.signal.addEventListener('abort', abort, { once: true });
    try {
      await upload.done();
    } catch (error) {
      await upload.abort().catch(() => {});
      throw error;
    } finally {
      options.signal.removeEventListener('abort', abort);
    }
    // An abort that raced the completion: what completed is not wanted.
    if (options.signal.aborted) {
      await this.delete(location);
      throw options.signal.reason instanceof Error ? options.signal.reason : new Error('upload aborted');
    }
  }

  async delete(location: string): Promise<void> {
    await this.#client.send(new this.#sdk.DeleteObjectCommand({ Bucket: this.#bucket, Key: this.#key(location) }));
  }

  async stat(location: string): Promise<StoredFileInfo | null> {
    try {
      const head = await this.#client.send(
        new this.#sdk.HeadObjectCommand({ Bucket: this.#bucket, Key: this.#key(location) }),
      );
      return {
        size: head.ContentLength ?? 0,
        modified: head.LastModified?.getTime() ?? 0,
        contentType: head.ContentType ?? null,
        etag: head.ETag ?? null,
      };
    } catch (error) {
      if (isNotFound(error)) return null;
      throw error;
    }
  }

  async read(location: string, range?: ByteRange): Promise<Readable | null> {
    try {
      const got = await this.#client.send(
        new this.#sdk.GetObjectCommand({
          Bucket: this.#bucket,
          Key: this.#key(location),
          ...(range ? { Range: `bytes=${range.start}-${range.end}` } : {}),
        }),
      );
      return got.Body as Readable;
    } catch (error) {
      if (isNotFound(error)) return null;
      throw error;
    }
  }

  async signedUrl(location: string, expiresInSeconds: number, filename: string): Promise<string | null> {
    const { getSignedUrl } = await import('@aws-sdk/s3-request-presigner');
    const command = new this.#sdk.GetObjectCommand({
      Bucket: this.#bucket,
      Key: this.#key(location),
      ResponseContentDisposition: `inline; filename*=UTF-8''${encodeURIComponent(filename)}`,
    });
    return getSignedUrl(this.#client, command, { expiresIn: expiresInSeconds });
  }

  async putNote(key: string, value: unknown): Promise<void> {
    await this.#client.send(
      new this.#sdk.PutObjectCommand({
        Bucket: this.#bucket,
        Key: `${NOTES}${key}`,
        Body: JSON.stringify(value),
        ContentType: 'application/json',
      }),
    );
  }

  async getNote(key: string): Promise<unknown> {
    try {
      const got = await this.#client.send(
        new this.#sdk.GetObjectCommand({ Bucket: this.#bucket, Key: `${NOTES}${key}` }),
      );
      return JSON.parse((await got.Body?.transformToString()) ?? 'null') as unknown;
    } catch (error) {
      if (isNotFound(error)) return null;
      throw error;
    }
  }

  async deleteNote(key: string): Promise<void> {
    await this.#client.send(new this.#sdk.DeleteObjectCommand({ Bucket: this.#bucket, Key: `${NOTES}${key}` }));
  }

  async *listNotes(prefix: string): AsyncIterable<{ key: string; modified: number }> {
    let token: string | undefined;
    do {
      const page = await this.#client.send(
        new this.#sdk.ListObjectsV2Command({
          Bucket: this.#bucket,
          Prefix: `${NOTES}${prefix}`,
          ...(token ? { ContinuationToken: token } : {}),
        }),
      );
      for (const item of page.Contents ?? []) {
        if (item.Key) yield { key: item.Key.slice(NOTES.length), modified: item.LastModified?.getTime() ?? 0 };
      }
      token = page.IsTruncated ? page.NextContinuationToken : undefined;
    } while (token);
  }

  ping(): Promise<boolean> {
    return probe(this);
  }

  async close(): Promise<void> {
    this.#client.destroy();
  }
}
