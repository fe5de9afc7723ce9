import {
  ConfigError,
  envBool,
  envEnum,
  envInt,
  envUrl,
  loadConfig,
  type StorageMode,
  WRITABLE_STORAGE_MODES,
} from '@polyvision/shared';
import { z } from 'zod';

export type { StorageMode };

/** SE modes (DESIGN.md): `edit` read/write/delete, `rw` read/write, `ro` read only, `ar` archive (read only, no deletes). */
export const STORAGE_MODES = ['edit', 'rw', 'ro', 'ar'] as const satisfies readonly StorageMode[];

/** Whether a mode accepts reservations and uploads. */
export function isWritableMode(mode: StorageMode): boolean {
  return WRITABLE_STORAGE_MODES.includes(mode);
}

/**
 * Environment schema. Seed names are kept (`STORAGE_ELEMENT_ID`,
 * `STORAGE_DATACENTER_LOCATION`, `STORAGE_TYPE`, `STORAGE_EXTERNAL_ENDPOINT`,
 * `STORAGE_S3_SOFT_CAPACITY_LIMIT` in bytes, from
 * seeds/capacity-management-migration-plan.md); new names carry their unit.
 */
const envSchema = z.object({
  STORAGE_ELEMENT_ID: z
    .string()
    .regex(/^[A-Za-z0-9][A-Za-z0-9._-]{0,99}$/, { message: 'an id of letters, digits, . _ -' }),
  STORAGE_DATACENTER_LOCATION: z.string().min(1, { message: 'a datacenter name' }),
  STORAGE_TYPE: envEnum(['local', 's3'] as const, 'local'),
  STORAGE_EXTERNAL_ENDPOINT: envUrl().optional(),
  STORAGE_MODE: envEnum(STORAGE_MODES, 'rw'),
  STORAGE_DATA_DIR: z.string().min(1, { message: 'a folder path' }),
  STORAGE_CAPACITY_LIMIT_BYTES: envInt(undefined, 1).optional(),
  STORAGE_RESERVED_BYTES: envInt(0, 0),
  STORAGE_PORT: envInt(8300, 0, 65535),
  STORAGE_HOST: z
    .string()
    .min(1)
    .optional()
    .transform((v) => v ?? '127.0.0.1'),
  STORAGE_TOKENS: z
    .string({ message: 'a comma-separated list of bearer tokens' })
    .transform((v) =>
      v
        .split(',')
        .map((t) => t.trim())
        .filter((t) => t.length > 0),
    )
    .pipe(z.array(z.string()).min(1, { message: 'at least one bearer token' })),
  STORAGE_RESERVATION_TTL_MS: envInt(600_000, 1_000),
  STORAGE_RESERVATION_MAX_TTL_MS: envInt(86_400_000, 1_000),
  STORAGE_CAPACITY_PROBE_INTERVAL_MS: envInt(1_000, 0),
  STORAGE_CAPACITY_ETAG_GRANULARITY_BYTES: envInt(1024 * 1024, 1),
  STORAGE_BODY_IDLE_TIMEOUT_MS: envInt(10_000, 100, 600_000),
  STORAGE_S3_SOFT_CAPACITY_LIMIT: envInt(undefined, 1).optional(),
  STORAGE_S3_ENDPOINT: envUrl().optional(),
  STORAGE_S3_BUCKET: z.string().min(3).optional(),
  STORAGE_S3_PREFIX: z.string().optional(),
  STORAGE_S3_REGION: z
    .string()
    .optional()
    .transform((v) => v ?? 'us-east-1'),
  STORAGE_S3_ACCESS_KEY_ID: z.string().optional(),
  STORAGE_S3_SECRET_ACCESS_KEY: z.string().optional(),
  STORAGE_S3_FORCE_PATH_STYLE: envBool(true),
  STORAGE_S3_PART_SIZE_BYTES: envInt(8 * 1024 * 1024, 5 * 1024 * 1024),
});

/** S3 connection settings, present when `backend` is `s3`. */
export interface S3Settings {
  endpoint: string;
  bucket: string;
  /** Key prefix, ends with `/` unless empty. */
  prefix: string;
  region: string;
  accessKeyId: string;
  secretAccessKey: string;
  forcePathStyle: boolean;
  /** Soft capacity limit (seed `STORAGE_S3_SOFT_CAPACITY_LIMIT`), bytes. */
  softCapacityLimitBytes: number;
  /** Multipart part size, bytes (≥ 5 MiB, the S3 minimum). */
  partSizeBytes: number;
}

/** The compiled, fully defaulted SE configuration the code uses. */
export interface StorageElementConfig {
  storageId: string;
  location: string;
  backend: 'local' | 's3';
  /** Reported as `endpoint`; defaults to `http://<host>:<port>`. */
  externalEndpoint: string | undefined;
  mode: StorageMode;
  dataDir: string;
  /** Optional quota, bytes: several SEs may share one filesystem. */
  capacityLimitBytes: number | undefined;
  /** Headroom kept free, bytes. */
  reservedBytes: number;
  host: string;
  /** Listen port; 0 picks a free one. */
  port: number;
  tokens: string[];
  reservationTtlMs: number;
  reservationMaxTtlMs: number;
  /** How long a capacity probe (statfs / S3 usage) is reused, ms. */
  capacityProbeIntervalMs: number;
  /** Byte counts are rounded down to this in the capacity ETag, bytes. */
  capacityEtagGranularityBytes: number;
  /**
   * Longest silence inside a PATCH body, ms: past it the request is cut, the
   * bytes received so far are kept and the upload is free for the next
   * request (a stalled client never holds `upload_busy` for minutes).
   */
  bodyIdleTimeoutMs: number;
  s3: S3Settings | undefined;
}

/**
 * Reads and validates the SE configuration from environment variables.
 *
 * @param env - variables to read. @defaultValue process.env
 * @throws ConfigError naming the variable, its value and what was expected;
 *   also when `STORAGE_TYPE=s3` lacks an S3 setting.
 */
export function loadStorageElementConfig(env: Record<string, string | undefined> = process.env): StorageElementConfig {
  const e = loadConfig(envSchema, env);
  let s3: S3Settings | undefined;
  if (e.STORAGE_TYPE === 's3') {
    const need = <T>(name: string, value: T | undefined): T => {
      if (value === undefined)
        throw new ConfigError(name, 'got nothing, expected a value (required with STORAGE_TYPE=s3)');
      return value;
    };
    const prefix = e.STORAGE_S3_PREFIX ?? `${e.STORAGE_ELEMENT_ID}/`;
    s3 = {
      endpoint: need('STORAGE_S3_ENDPOINT', e.STORAGE_S3_ENDPOINT),
      bucket: need('STORAGE_S3_BUCKET', e.STORAGE_S3_BUCKET),
      prefix: prefix === '' || prefix.endsWith('/') ? prefix : `${prefix}/`,
      region: e.STORAGE_S3_REGION,
      accessKeyId: need('STORAGE_S3_ACCESS_KEY_ID', e.STORAGE_S3_ACCESS_KEY_ID),
      secretAccessKey: need('STORAGE_S3_SECRET_ACCESS_KEY', e.STORAGE_S3_SECRET_ACCESS_KEY),
      forcePathStyle: e.STORAGE_S3_FORCE_PATH_STYLE,
      softCapacityLimitBytes: need('STORAGE_S3_SOFT_CAPACITY_LIMIT', e.STORAGE_S3_SOFT_CAPACITY_LIMIT),
      partSizeBytes: e.STORAGE_S3_PART_SIZE_BYTES,
    };
  }
  if (e.STORAGE_RESERVATION_TTL_MS > e.STORAGE_RESERVATION_MAX_TTL_MS) {
    throw new ConfigError(
      'STORAGE_RESERVATION_TTL_MS',
      `got ${e.STORAGE_RESERVATION_TTL_MS}, expected at most STORAGE_RESERVATION_MAX_TTL_MS (${e.STORAGE_RESERVATION_MAX_TTL_MS})`,
    );
  }
  return Object.freeze({
    storageId: e.STORAGE_ELEMENT_ID,
    location: e.STORAGE_DATACENTER_LOCATION,
    backend: e.STORAGE_TYPE,
    externalEndpoint: e.STORAGE_EXTERNAL_ENDPOINT,
    mode: e.STORAGE_MODE,
    dataDir: e.STORAGE_DATA_DIR,
    capacityLimitBytes: e.STORAGE_CAPACITY_LIMIT_BYTES,
    reservedBytes: e.STORAGE_RESERVED_BYTES,
    host: e.STORAGE_HOST,
    port: e.STORAGE_PORT,
    tokens: e.STORAGE_TOKENS,
    reservationTtlMs: e.STORAGE_RESERVATION_TTL_MS,
    reservationMaxTtlMs: e.STORAGE_RESERVATION_MAX_TTL_MS,
    capacityProbeIntervalMs: e.STORAGE_CAPACITY_PROBE_INTERVAL_MS,
    capacityEtagGranularityBytes: e.STORAGE_CAPACITY_ETAG_GRANULARITY_BYTES,
    bodyIdleTimeoutMs: e.STORAGE_BODY_IDLE_TIMEOUT_MS,
    s3,
  });
}
