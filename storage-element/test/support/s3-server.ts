import { compileServicesOptions } from '../../../deploy/src/services/options.ts';
import { s3Env, s3Service } from '../../../deploy/src/services/s3.ts';

/**
 * The S3 endpoint for tests: `S3_ENDPOINT` (+ `S3_ACCESS_KEY_ID`,
 * `S3_SECRET_ACCESS_KEY`), which the vitest global setup exports from
 * `pnpm polyvision services up` (or takes from the environment). Fallback when
 * they are unset (e.g. `POLYVISION_SERVICES=off`): the project's local
 * versitygw, built with `go install` on first use and started as a daemon
 * like the other local services (`pnpm polyvision services down` stops it).
 */
export async function ensureS3(): Promise<{ endpoint: string; accessKeyId: string; secretAccessKey: string }> {
  if (process.env.S3_ENDPOINT) {
    return {
      endpoint: process.env.S3_ENDPOINT,
      accessKeyId: process.env.S3_ACCESS_KEY_ID ?? '',
      secretAccessKey: process.env.S3_SECRET_ACCESS_KEY ?? '',
    };
  }
  const options = compileServicesOptions({ onProgress: (line) => process.stderr.write(`[s3] ${line}\n`) });
  await s3Service.install(options);
  await s3Service.up(options);
  const env = s3Env(options);
  return { endpoint: env.S3_ENDPOINT, accessKeyId: env.S3_ACCESS_KEY_ID, secretAccessKey: env.S3_SECRET_ACCESS_KEY };
}

/** Deletes every object of a test bucket and the bucket itself (cleanup after a test file). */
export async function deleteBucket(
  s3: { endpoint: string; accessKeyId: string; secretAccessKey: string },
  bucket: string,
): Promise<void> {
  const { DeleteBucketCommand, DeleteObjectsCommand, ListObjectsV2Command, S3Client } = await import(
    '@aws-sdk/client-s3'
  );
  const client = new S3Client({
    endpoint: s3.endpoint,
    region: 'us-east-1',
    forcePathStyle: true,
    credentials: { accessKeyId: s3.accessKeyId, secretAccessKey: s3.secretAccessKey },
  });
  try {
    for (;;) {
      const page = await client.send(new ListObjectsV2Command({ Bucket: bucket }));
      const keys = (page.Contents ?? []).flatMap((o) => (o.Key ? [{ Key: o.Key }] : []));
      if (keys.length === 0) break;
      await client.send(new DeleteObjectsCommand({ Bucket: bucket, Delete: { Objects: keys } }));
    }
    await client.send(new DeleteBucketCommand({ Bucket: bucket }));
  } catch (error) {
    if ((error as { name?: string }).name !== 'NoSuchBucket') throw error;
  } finally {
    client.destroy();
  }
}

/**
 * The SE environment of a storage backend for tests: `local` with a capacity
 * limit, or `s3` on {@link ensureS3} with a soft capacity limit, 5 MiB parts
 * and `bucket`.
 *
 * @param capacityLimitBytes - what the SE offers, in bytes.
 */
export async function backendEnv(
  backend: 'local' | 's3',
  { capacityLimitBytes, bucket }: { capacityLimitBytes: number; bucket: string },
): Promise<Record<string, string>> {
  if (backend === 'local') return { STORAGE_TYPE: 'local', STORAGE_CAPACITY_LIMIT_BYTES: String(capacityLimitBytes) };
  const s3 = await ensureS3();
  return {
    STORAGE_TYPE: 's3',
    STORAGE_S3_ENDPOINT: s3.endpoint,
    STORAGE_S3_ACCESS_KEY_ID: s3.accessKeyId,
    STORAGE_S3_SECRET_ACCESS_KEY: s3.secretAccessKey,
    STORAGE_S3_BUCKET: bucket,
    STORAGE_S3_SOFT_CAPACITY_LIMIT: String(capacityLimitBytes),
    STORAGE_S3_PART_SIZE_BYTES: String(5 * 2 ** 20),
  };
}
