/**
 * A stream stored in S3 all or nothing: one PutObject for a file smaller than a part, else a
 * multipart upload of 5 MiB parts, one in flight (about two parts in memory whatever the size).
 * Written here rather than with `@aws-sdk/lib-storage`, whose abort leaves the multipart upload
 * on the service (it never sends AbortMultipartUpload with `leavePartsOnError`, and without it a
 * CreateMultipartUpload still in flight when the upload is aborted completes unseen): here the
 * upload id is known before anything else happens, and every failure — the signal (a limit, the
 * client gone or silent), the body, the service — ends with AbortMultipartUpload.
 */
import type { Readable } from 'node:stream';
import type { CompletedPart, S3Client } from '@aws-sdk/client-s3';

type Sdk = typeof import('@aws-sdk/client-s3');

/** S3's smallest part (all parts but the last). */
const PART_SIZE = 5 * 1024 * 1024;

export interface ObjectParams {
  Bucket: string;
  Key: string;
  ContentType: string;
  ContentDisposition: string;
  ACL?: string;
}

const CHECKSUM_FIELDS = [
  'ChecksumCRC32',
  'ChecksumCRC32C',
  'ChecksumCRC64NVME',
  'ChecksumSHA1',
  'ChecksumSHA256',
] as const;

export class S3Uploader {
  readonly #sdk: Sdk;
  readonly #client: S3Client;
  /** Called when an AbortMultipartUpload fails (the sweeper may still abort it later). */
  readonly #onAbortFailure: (error: unknown, key: string, uploadId: string) => void;

  constructor(sdk: Sdk, client: S3Client, onAbortFailure: (error: unknown, key: string, uploadId: string) => void) {
    this.#sdk = sdk;
    this.#client = client;
    this.#onAbortFailure = onAbortFailure;
  }

  /** Stores `body` at `params.Key`; rejects with what stopped it, leaving no object and no parts. */
  async upload(params: ObjectParams, body: Readable, signal: AbortSignal): Promise<void> {
    const stop = () => body.destroy(signal.reason instanceof Error ? signal.reason : new Error('upload aborted'));
    if (signal.aborted) stop();
    signal.addEventListener('abort', stop, { once: true });
    let uploadId: string | null = null;
    try {
      let pending: Buffer[] = [];
      let pendingBytes = 0;
      const parts: CompletedPart[] = [];
      for await (const chunk of body as AsyncIterable<Buffer>) {
        pending.push(chunk);
        pendingBytes += chunk.length;
        while (pendingBytes >= PART_SIZE) {
          const joined = Buffer.concat(pending);
          uploadId ??= await this.#create(params);
          if (signal.aborted) throw signal.reason;
          parts.push(await this.#part(params, uploadId, parts.length + 1, joined.subarray(0, PART_SIZE), signal));
          pending = [joined.subarray(PART_SIZE)];
          pendingBytes = joined.length - PART_SIZE;
        }
      }
      if (signal.aborted) throw signal.reason;
      const rest = Buffer.concat(pending);
      if (uploadId === null) {
        await this.#client.send(new this.#sdk.PutObjectCommand({ ...params, ACL: params.ACL as never, Body: rest }), {
          abortSignal: signal,
        });
        return;
      }
      if (rest.length > 0 || parts.length === 0)
        parts.push(await this.#part(params, uploadId, parts.length + 1, rest, signal));
      // Not cut by the signal: a completion under way is let finish (the caller deletes what it made).
      await this.#client.send(
        new this.#sdk.CompleteMultipartUploadCommand({
          Bucket: params.Bucket,
          Key: params.Key,
          UploadId: uploadId,
          MultipartUpload: { Parts: parts },
        }),
      );
      uploadId = null;
    } finally {
      signal.removeEventListener('abort', stop);
      if (uploadId !== null) await this.abort(params.Bucket, params.Key, uploadId);
    }
  }

  /** AbortMultipartUpload; a failure is reported, never thrown (the upload's own error wins). */
  async abort(bucket: string, key: string, uploadId: string): Promise<boolean> {
    try {
      await this.#client.send(
        new this.#sdk.AbortMultipartUploadCommand({ Bucket: bucket, Key: key, UploadId: uploadId }),
        { abortSignal: AbortSignal.timeout(30_000) },
      );
      return true;
    } catch (error) {
      this.#onAbortFailure(error, key, uploadId);
      return false;
    }
  }

  /** Never cut by the signal: once it is sent, its id must be known, to abort what it creates. */
  async #create(params: ObjectParams): Promise<string> {
    // As lib-storage: where the SDK adds checksums to parts (AWS itself), the upload declares one.
    const checksums = await this.#client.config.requestChecksumCalculation();
    const created = await this.#client.send(
      new this.#sdk.CreateMultipartUploadCommand({
        ...params,
        ACL: params.ACL as never,
        ...(checksums === 'WHEN_SUPPORTED' ? { ChecksumAlgorithm: 'CRC32' as const } : {}),
      }),
    );
    if (!created.UploadId) throw new Error('CreateMultipartUpload answered no UploadId');
    return created.UploadId;
  }

  async #part(
    params: ObjectParams,
    uploadId: string,
    number: number,
    data: Buffer,
    signal: AbortSignal,
  ): Promise<CompletedPart> {
    const result = await this.#client.send(
      new this.#sdk.UploadPartCommand({
        Bucket: params.Bucket,
        Key: params.Key,
        UploadId: uploadId,
        PartNumber: number,
        Body: data,
        ContentLength: data.length,
      }),
      { abortSignal: signal },
    );
    if (!result.ETag) throw new Error(`UploadPart ${number} answered no ETag`);
    const part: CompletedPart = { PartNumber: number, ETag: result.ETag };
    for (const field of CHECKSUM_FIELDS) if (result[field]) part[field] = result[field];
    return part;
  }
}
