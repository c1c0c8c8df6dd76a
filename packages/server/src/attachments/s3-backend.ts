/**
 * Files in S3-compatible object storage (AWS S3, MinIO, Ceph, R2…), through the AWS SDK v3.
 * Uploads stream as a multipart upload (s3-multipart.ts): parts of 5 MiB (S3's smallest), one
 * in flight, so an upload of any size holds about two parts in memory; the object exists only
 * once the upload completes, and a failed or aborted one is aborted on the service (no object,
 * no parts kept; what a dead process left, the sweeper aborts: `abortStaleUploads`). The SDK is
 * loaded only when this backend is chosen.
 */
import type { Readable } from 'node:stream';
import type { S3Client } from '@aws-sdk/client-s3';
import type { FastifyBaseLogger } from 'fastify';
import type { AttachmentSettings } from './settings.js';
import { type ByteRange, type FileBackend, probe, type StoredFileInfo, type WriteOptions } from './backend.js';
import { dispositionOf, servedTypeOf } from './media-types.js';
import { isFileLocation } from './names.js';
import { S3Uploader } from './s3-multipart.js';

type Log = () => FastifyBaseLogger | undefined;

const NOTES = '.quire/notes/';

type Sdk = typeof import('@aws-sdk/client-s3');

/** The endpoint of the settings, if not AWS's own: `attachment_aws_endpoint_url`, else host/port/is_secure. */
function s3Endpoint(settings: AttachmentSettings): string | null {
  if (settings.attachment_aws_endpoint_url) return settings.attachment_aws_endpoint_url.replace(/\/+$/, '');
  if (!settings.attachment_aws_host) return null;
  const scheme = settings.attachment_aws_is_secure ? 'https' : 'http';
  const port = settings.attachment_aws_port ? `:${settings.attachment_aws_port}` : '';
  return `${scheme}://${settings.attachment_aws_host}${port}`;
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

function isNotImplemented(error: unknown): boolean {
  const { name, $metadata } = error as { name?: string; $metadata?: { httpStatusCode?: number } };
  return name === 'NotImplemented' || $metadata?.httpStatusCode === 501;
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
  readonly #uploader: S3Uploader;

  private constructor(sdk: Sdk, client: S3Client, bucket: string, acl: string | null, log: Log) {
    this.#sdk = sdk;
    this.#client = client;
    this.#bucket = bucket;
    this.#acl = acl;
    this.#uploader = new S3Uploader(sdk, client, (error, key, uploadId) =>
      log()?.warn(
        { err: error, key, uploadId },
        'attachments: AbortMultipartUpload failed (the sweeper tries again once it is stale)',
      ),
    );
  }

  static async create(settings: AttachmentSettings, log: Log = () => undefined): Promise<S3FileBackend> {
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
    return new S3FileBackend(sdk, client, settings.attachment_aws_bucket_name as string, acl || null, log);
  }

  #key(location: string): string {
    if (!isFileLocation(location)) throw new Error(`not a file location: ${JSON.stringify(location)}`);
    return location;
  }

  async write(location: string, body: Readable, options: WriteOptions): Promise<void> {
    const params = {
      Bucket: this.#bucket,
      Key: this.#key(location),
      ContentType: options.contentType,
      ContentDisposition: options.disposition,
      ...(this.#acl ? { ACL: this.#acl } : {}),
    };
    await this.#uploader.upload(params, body, options.signal);
    // An abort that raced the completion: what completed is not wanted.
    if (options.signal.aborted) {
      await this.delete(location);
      throw options.signal.reason instanceof Error ? options.signal.reason : new Error('upload aborted');
    }
  }

  /**
   * Aborts the multipart uploads initiated more than `olderThanMs` ago under `prefixes` (where
   * this server's folders are), except at `busy` locations (uploads under way: their journal
   * notes are fresh). Uploads a process left when it died, or whose abort failed. Null when the
   * service cannot list them (ListMultipartUploads not implemented, as on s3rver).
   */
  async abortStaleUploads(olderThanMs: number, prefixes: string[], busy: Set<string>, now = Date.now()) {
    let aborted = 0;
    for (const prefix of prefixes) {
      let keyMarker: string | undefined;
      let uploadIdMarker: string | undefined;
      do {
        let page: import('@aws-sdk/client-s3').ListMultipartUploadsCommandOutput;
        try {
          page = await this.#client.send(
            new this.#sdk.ListMultipartUploadsCommand({
              Bucket: this.#bucket,
              ...(prefix ? { Prefix: prefix } : {}),
              ...(keyMarker ? { KeyMarker: keyMarker } : {}),
              ...(uploadIdMarker ? { UploadIdMarker: uploadIdMarker } : {}),
            }),
          );
        } catch (error) {
          if (isNotImplemented(error)) return null;
          throw error;
        }
        for (const upload of page.Uploads ?? []) {
          const { Key: key, UploadId: id, Initiated: initiated } = upload;
          if (!key || !id || !isFileLocation(key) || busy.has(key)) continue;
          if (initiated && now - initiated.getTime() < olderThanMs) continue;
          if (await this.#uploader.abort(this.#bucket, key, id)) aborted += 1;
        }
        keyMarker = page.IsTruncated ? page.NextKeyMarker : undefined;
        uploadIdMarker = page.IsTruncated ? page.NextUploadIdMarker : undefined;
      } while (keyMarker);
    }
    return aborted;
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
      ResponseContentDisposition: dispositionOf(servedTypeOf(location), filename),
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
