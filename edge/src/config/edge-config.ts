/**
 * The edge node's configuration file (`pnpm polyvision edge --config edge.json`),
 * validated once at start (zod) into the filled form the node uses. Relative
 * paths are resolved against the folder of the config file.
 */
import { readFile } from 'node:fs/promises';
import { dirname, isAbsolute, resolve } from 'node:path';
import { safeId, ValidationError, type VenueCalibration, venueCalibrationSchema } from '@polyvision/shared';
import { z } from 'zod';
import { cameraCorrespondencesSchema } from '../calibration/index.ts';
import { cameraSourceSchema } from '../capture/index.ts';

const MiB = 1024 * 1024;

const scheduledMatchSchema = z.object({
  match_id: safeId,
  /** Kickoff, ISO 8601 with offset. */
  kickoff: z.iso.datetime({ offset: true, message: 'an ISO 8601 date-time with offset, e.g. 2026-11-21T15:00:00Z' }),
  /** Match length from kickoff (with half-time and stoppage), seconds. */
  duration_s: z
    .number()
    .int()
    .min(1)
    .max(6 * 3600)
    .default(7200),
});

export const edgeConfigSchema = z.object({
  edge_id: safeId,
  organization_id: safeId,
  ingest: z.object({
    /** Core ingest base URL; uploads go to `<url>/api/v1/uploads`. */
    url: z.url({ protocol: /^https?$/, message: 'an http:// or https:// URL' }),
    /** This edge's bearer token. */
    token: z.string().min(1, 'the ingest token must not be empty'),
    chunk_size_bytes: z
      .number()
      .int()
      .min(64 * 1024)
      .max(1024 * MiB)
      .default(8 * MiB),
    /** Upload cap, bytes per second; 0 = none. */
    bandwidth_bytes_per_s: z.number().int().min(0).default(0),
    /** Also upload each camera's raw segments (else they are removed once stitched). */
    upload_camera_segments: z.boolean().default(false),
    /** Cap on the backoff between upload retries while the ingest is unreachable, ms. */
    max_retry_delay_ms: z.number().int().min(100).max(3_600_000).default(60_000),
    /** What confirms a file before the spool deletes it (see Uploader). */
    confirmation: z.enum(['sha256_header', 'tus_completion']).default('sha256_header'),
  }),
  cameras: z
    .array(
      z.object({
        id: z.string().regex(/^[a-z0-9][a-z0-9_-]{0,63}$/, 'lower-case letters, digits, "-" and "_"'),
        source: cameraSourceSchema,
      }),
    )
    .min(1, 'at least one camera')
    .max(16)
    .refine((cams) => new Set(cams.map((c) => c.id)).size === cams.length, 'camera ids must be unique'),
  /** The venue calibration: a path to venue.json (relative to this file) or the object itself. */
  calibration: z.union([z.string().min(1), venueCalibrationSchema]).optional(),
  /** Point correspondences that replace the calibration's homographies (DLT + RANSAC at start). */
  calibration_points: z.array(cameraCorrespondencesSchema).default([]),
  panorama: z
    .object({
      enabled: z.boolean().default(true),
      encoder: z.enum(['auto', 'libx264', 'h264_nvenc']).default('auto'),
      /** x264 CRF / NVENC CQ. */
      quality: z.number().int().min(0).max(51).default(20),
      preset: z.enum(['ultrafast', 'superfast', 'veryfast', 'faster', 'fast', 'medium']).default('veryfast'),
      feather_px: z.number().min(1).max(4096).default(64),
      min_pitch_coverage: z.number().min(0).max(1).default(0.995),
      /** Seconds between two live seam checks (stitch/seam-check.ts); 0 turns the check off. */
      seam_check_interval_s: z.number().min(0).max(86_400).default(60),
      /** Seam error (median, panorama px) above which `seam_misaligned` is raised. */
      seam_alarm_px: z.number().positive().max(1000).default(4),
    })
    .prefault({}),
  /** Segment length, seconds (10–60 in production; shorter values are for tests). */
  segment_duration_s: z.number().int().min(1).max(60).default(10),
  spool: z.object({
    dir: z.string().min(1),
    min_free_bytes: z
      .number()
      .int()
      .min(0)
      .default(256 * MiB),
    max_spool_bytes: z.number().int().min(0).default(0),
    keep_confirmed_s: z.number().int().min(0).default(0),
  }),
  schedule: z
    .object({
      /** Recording starts this long before kickoff, seconds. */
      lead_s: z
        .number()
        .int()
        .min(0)
        .max(6 * 3600)
        .default(900),
      /** …and stops this long after the match's end, seconds. */
      tail_s: z
        .number()
        .int()
        .min(0)
        .max(6 * 3600)
        .default(300),
      matches: z.array(scheduledMatchSchema).default([]),
      heartbeat_s: z.number().int().min(1).max(3600).default(30),
      /** node-cron expression of the cleanup job (retention, disk guard). */
      cleanup_cron: z.string().default('*/1 * * * *'),
    })
    .prefault({}),
  status: z
    .object({
      host: z.string().default('127.0.0.1'),
      /** 0 picks a free port. */
      port: z.number().int().min(0).max(65_535).default(8088),
      /** Bearer token of the status API; unset: generated once into `<spool.dir>/status-token` (mode 0600). */
      token: z
        .string()
        .regex(/^[A-Za-z0-9\-._~+/]{16,512}$/, { message: '16–512 characters of A–Z a–z 0–9 - . _ ~ + /' })
        .optional(),
    })
    .prefault({}),
});

/** The parsed config, calibration loaded, paths absolute. */
export type EdgeConfig = Omit<z.infer<typeof edgeConfigSchema>, 'calibration'> & {
  calibration: VenueCalibration | null;
  /** Where the config came from. */
  configPath: string;
};

/** Formats zod issues as `path: message (got value)` lines. */
function describeIssues(error: z.ZodError, input: unknown): string {
  return error.issues
    .map((issue) => {
      const path = issue.path
        .map((p) => (typeof p === 'number' ? `[${p}]` : `.${String(p)}`))
        .join('')
        .replace(/^\./, '');
      let value: unknown = input;
      for (const p of issue.path) value = (value as Record<PropertyKey, unknown> | undefined)?.[p as PropertyKey];
      const got = value === undefined ? '' : ` (got ${JSON.stringify(value)?.slice(0, 80)})`;
      return `${path || '(root)'}: ${issue.message}${got}`;
    })
    .join('; ');
}

/**
 * Validates a parsed config object. Paths are resolved against `baseDir`.
 *
 * @throws ValidationError `edge_config_invalid` naming every bad field, its
 *   value and what was expected; `edge_calibration_mismatch` when the panorama
 *   is on and a camera has no calibration (or there is none);
 *   `edge_schedule_in_past` when a scheduled match has already ended.
 */
export async function compileEdgeConfig(
  input: unknown,
  baseDir: string,
  options: { nowMs?: number } = {},
): Promise<EdgeConfig> {
  const parsed = edgeConfigSchema.safeParse(input);
  if (!parsed.success) {
    throw new ValidationError('edge_config_invalid', `invalid edge config: ${describeIssues(parsed.error, input)}`, {
      details: { issues: parsed.error.issues.map((i) => ({ path: i.path.join('.'), message: i.message })) },
    });
  }
  const c = parsed.data;
  const abs = (p: string) => (isAbsolute(p) ? p : resolve(baseDir, p));
  let calibration: VenueCalibration | null = null;
  if (typeof c.calibration === 'string') {
    const path = abs(c.calibration);
    let raw: unknown;
    try {
      raw = JSON.parse(await readFile(path, 'utf8'));
    } catch (error) {
      throw new ValidationError(
        'edge_config_invalid',
        `calibration: cannot read ${path}: ${(error as Error).message}`,
        { cause: error },
      );
    }
    const venue = venueCalibrationSchema.safeParse(raw);
    if (!venue.success) {
      throw new ValidationError('edge_config_invalid', `calibration ${path}: ${describeIssues(venue.error, raw)}`);
    }
    calibration = venue.data;
  } else if (c.calibration) {
    calibration = c.calibration;
  }
  if (c.panorama.enabled) {
    if (!calibration) {
      throw new ValidationError('edge_calibration_mismatch', 'panorama.enabled is true but no calibration is given');
    }
    const known = new Set(calibration.cameras.map((cam) => cam.id));
    const missing = c.cameras.filter((cam) => !known.has(cam.id)).map((cam) => cam.id);
    if (missing.length > 0) {
      throw new ValidationError(
        'edge_calibration_mismatch',
        `cameras ${missing.join(', ')} are not in the calibration (it has ${[...known].join(', ')})`,
      );
    }
  }
  const now = options.nowMs ?? Date.now();
  for (const m of c.schedule.matches) {
    const end = Date.parse(m.kickoff) + m.duration_s * 1000 + c.schedule.tail_s * 1000;
    if (end <= now) {
      throw new ValidationError(
        'edge_schedule_in_past',
        `schedule: match ${m.match_id} (kickoff ${m.kickoff}, ${m.duration_s} s) ended before now (${new Date(now).toISOString()})`,
        { details: { match_id: m.match_id } },
      );
    }
  }
  const cameras = c.cameras.map((cam) => {
    const s = cam.source;
    const source =
      s.kind === 'file'
        ? { ...s, path: abs(s.path) }
        : s.kind === 'synthetic'
          ? { ...s, clip_dir: abs(s.clip_dir) }
          : s;
    return { ...cam, source };
  });
  return {
    ...c,
    cameras,
    calibration,
    spool: { ...c.spool, dir: abs(c.spool.dir) },
    configPath: resolve(baseDir),
  };
}

/**
 * Reads and validates the config file.
 * @throws ValidationError `edge_config_unreadable` (missing file, not JSON) or any error of {@link compileEdgeConfig}.
 */
export async function loadEdgeConfig(path: string, options: { nowMs?: number } = {}): Promise<EdgeConfig> {
  let raw: unknown;
  try {
    raw = JSON.parse(await readFile(path, 'utf8'));
  } catch (error) {
    throw new ValidationError(
      'edge_config_unreadable',
      `cannot read the edge config ${path}: ${(error as Error).message}`,
      {
        cause: error,
      },
    );
  }
  const config = await compileEdgeConfig(raw, dirname(resolve(path)), options);
  return { ...config, configPath: resolve(path) };
}
