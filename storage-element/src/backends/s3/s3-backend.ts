import { createReadStream } from 'node:fs';
import { statfs, unlink } from 'node:fs/promises';
import { Readable } from 'node:stream';
import {
  CreateBucketCommand,
  DeleteObjectCommand,
  GetObjectCommand,
  HeadBucketCommand,
  HeadObjectCommand,
  ListObjectsV2Command,
  S3Client,
  S3ServiceException,
} from '@aws-sdk/client-s3';
import { Upload } from '@aws-sdk/lib-storage';
import type { S3Settings } from '../../config.ts';
import { seErrors } from '../../errors.ts';
import type { BackendProbe, BlobBackend, ByteRange, FileMeta } from '../blob-backend.ts';

/** Options of {@link S3Backend}. */
export interface S3BackendOptions {
  s3: S3Settings;
  /** Local folder of the staging area (its free space bounds what can be staged). */
  stagingDir: string;
  /** Creates the bucket at `init` when missing (dev and tests). @defaultValue true */
  createBucket?: boolean;
}

function isNotFound(error: unknown): boolean {
  if (error instanceof S3ServiceException) {
    return (
      error.$metadata.httpStatusCode === 404 ||
      error.name === 'NotFound' ||
      error.name === 'NoSuchKey' ||
      error.name === 'NoSuchBucket'
    );
  }
  return false;
}

/**
 * Files as objects in an S3 bucket (AWS SDK v3), under `<prefix><file_id>`,
 * with the sha256 and creation time in object metadata (`x-amz-meta-sha256`,
 * `x-amz-meta-created-at`).
 *
 * Publishing streams the staged, checked file with `@aws-sdk/lib-storage`'s
 * `Upload` (multipart for files above one part, `partSizeBytes`; parts are
 * aborted on failure), so an object appears only when whole.
 *
 * Capacity (seed CapacityService, S3 branch): `total` = soft limit
 * (`STORAGE_S3_SOFT_CAPACITY_LIMIT`), `used` = bytes stored under the prefix
 * (listed at `init`, then kept up to date) + staged bytes, `free` = the smaller
 * of `total − used` and the staging filesystem's free space.
 */
export class S3Backend implements BlobBackend {
  readonly kind = 's3' as const;
  readonly #client: S3Client;
  readonly #s3: S3Settings;
  readonly #stagingDir: string;
  readonly #createBucket: boolean;
  #storedBytes = 0;

  constructor(options: S3BackendOptions) {
    this.#s3 = options.s3;
    this.#stagingDir = options.stagingDir;
    this.#createBucket = options.createBucket ?? true;
    this.#client = new S3Client({
      endpoint: options.s3.endpoint,
      region: options.s3.region,
      forcePathStyle: options.s3.forcePathStyle,
      credentials: { accessKeyId: options.s3.accessKeyId, secretAccessKey: options.s3.secretAccessKey },
      maxAttempts: 3,
    });
  }

  /** Bytes of all objects under the prefix. */
  get storedBytes(): number {
    return this.#storedBytes;
  }

  async init(): Promise<void> {
    const Bucket = this.#s3.bucket;
    try {
      await this.#client.send(new HeadBucketCommand({ Bucket }));
    } catch (error) {
      if (!isNotFound(error) || !this.#createBucket) {
        throw seErrors.storageFailure(
          `S3 bucket ${Bucket} at ${this.#s3.endpoint}: ${(error as Error).message}`,
          error,
        );
      }
      await this.#client.send(new CreateBucketCommand({ Bucket }));
    }
    let stored = 0;
    let ContinuationToken: string | undefined;
    do {
      const page = await this.#client.send(
        new ListObjectsV2Command({ Bucket, Prefix: this.#s3.prefix, ContinuationToken }),
      );
      for (const object of page.Contents ?? []) stored += object.Size ?? 0;
      ContinuationToken = page.IsTruncated ? page.NextContinuationToken : undefined;
    } while (ContinuationToken);
    this.#storedBytes = stored;
  }

  async probe(stagedBytes: number): Promise<BackendProbe> {
    let failure: string | undefined;
    try {
      await this.#client.send(new HeadBucketCommand({ Bucket: this.#s3.bucket }));
    } catch (error) {
      failure = `S3 unreachable: ${(error as Error).message}`;
    }
    const fs = await statfs(this.#stagingDir);
    const totalBytes = this.#s3.softCapacityLimitBytes;
    const usedBytes = this.#storedBytes + stagedBytes;
    return {
      totalBytes,
      usedBytes: Math.min(usedBytes, totalBytes),
      freeBytes: Math.max(0, Math.min(fs.bavail * fs.bsize, totalBytes - usedBytes)),
      freeInodeRatio: fs.files > 0 ? fs.ffree / fs.files : 1,
      failure,
    };
  }

  async publish(stagedPath: string, meta: FileMeta): Promise<void> {
    if (await this.stat(meta.fileId)) throw seErrors.fileExists(meta.fileId);
    const upload = new Upload({
      client: this.#client,
      partSize: this.#s3.partSizeBytes,
      queueSize: 4,
      leavePartsOnError: false,
      params: {
        Bucket: this.#s3.bucket,
        Key: this.#key(meta.fileId),
        Body: createReadStream(stagedPath),
        ContentType: meta.contentType,
        Metadata: { sha256: meta.sha256, 'created-at': meta.createdAt },
      },
    });
    try {
      await upload.done();
    } catch (error) {
      throw seErrors.storageFailure(`cannot store ${meta.fileId} in S3: ${(error as Error).message}`, error);
    }
    await unlink(stagedPath);
    this.#storedBytes += meta.sizeBytes;
  }

  async stat(fileId: string): Promise<FileMeta | undefined> {
    try {
      const head = await this.#client.send(new HeadObjectCommand({ Bucket: this.#s3.bucket, Key: this.#key(fileId) }));
      return {
        fileId,
        sizeBytes: head.ContentLength ?? 0,
        sha256: head.Metadata?.sha256 ?? '',
        contentType: head.ContentType ?? 'application/octet-stream',
        createdAt: head.Metadata?.['created-at'] ?? head.LastModified?.toISOString() ?? new Date(0).toISOString(),
      };
    } catch (error) {
      if (isNotFound(error)) return undefined;
      throw seErrors.storageFailure(`S3 HEAD ${fileId}: ${(error as Error).message}`, error);
    }
  }

  async read(fileId: string, range?: ByteRange): Promise<Readable> {
    try {
      const object = await this.#client.send(
        new GetObjectCommand({
          Bucket: this.#s3.bucket,
          Key: this.#key(fileId),
          Range: range ? `bytes=${range.start}-${range.end}` : undefined,
        }),
      );
      const body = object.Body;
      if (body instanceof Readable) return body;
      if (body && 'transformToWebStream' in body) {
        return Readable.fromWeb(body.transformToWebStream() as import('node:stream/web').ReadableStream);
      }
      throw new Error('S3 answered without a body');
    } catch (error) {
      if (isNotFound(error)) throw seErrors.fileNotFound(fileId);
      throw seErrors.storageFailure(`S3 GET ${fileId}: ${(error as Error).message}`, error);
    }
  }

  async delete(fileId: string): Promise<boolean> {
    const meta = await this.stat(fileId);
    if (!meta) return false;
    try {
      await this.#client.send(new DeleteObjectCommand({ Bucket: this.#s3.bucket, Key: this.#key(fileId) }));
    } catch (error) {
      throw seErrors.storageFailure(`S3 DELETE ${fileId}: ${(error as Error).message}`, error);
    }
    this.#storedBytes -= meta.sizeBytes;
    return true;
  }

  async close(): Promise<void> {
    this.#client.destroy();
  }

  #key(fileId: string): string {
    return `${this.#s3.prefix}${fileId}`;
  }
}
