import { createHash } from 'node:crypto';
import { createReadStream } from 'node:fs';
import { copyFile, readFile, stat } from 'node:fs/promises';
import { basename, join } from 'node:path';
import { pipeline } from 'node:stream/promises';
import { createStitcher, tusUpload } from '@polyvision/edge';
import { abortableSleep, PolyvisionError, type VenueCalibration, venueCalibrationSchema } from '@polyvision/shared';

/** What the demo edge stitches. */
export interface EdgeInput {
  /** Camera videos; one video = a one-camera rig (no stitching). */
  cameraPaths: string[];
  /** venue.json; required with several cameras. */
  calibrationPath: string | null;
}

/** The panorama the edge made. */
export interface EdgePanorama {
  path: string;
  sizeBytes: number;
  sha256: string;
  /** False for a one-camera rig (the camera video is the panorama). */
  stitched: boolean;
  widthPx: number | null;
  heightPx: number | null;
  stitchMs: number;
}

/**
 * Reads and validates a venue calibration file.
 * @throws PolyvisionError `demo_calibration_invalid` naming the file and the problem.
 */
export async function readCalibration(path: string): Promise<VenueCalibration> {
  let raw: unknown;
  try {
    raw = JSON.parse(await readFile(path, 'utf8'));
  } catch (error) {
    throw new PolyvisionError(
      'demo_calibration_invalid',
      `cannot read calibration ${path}: ${(error as Error).message}`,
    );
  }
  const parsed = venueCalibrationSchema.safeParse(raw);
  if (!parsed.success) {
    const issue = parsed.error.issues[0];
    throw new PolyvisionError(
      'demo_calibration_invalid',
      `calibration ${path}: ${issue?.path.join('.') || '(root)'}: ${issue?.message}`,
    );
  }
  return parsed.data;
}

/**
 * The edge node's on-site work for the demo: stitches the recorded cameras
 * into one panorama with the edge's stitcher (remap maps from the venue
 * calibration, feathered seams, H.264), the whole clip as one segment.
 *
 * @throws PolyvisionError `demo_calibration_invalid`, `demo_calibration_mismatch`
 *   (cameras and calibration disagree), the stitcher's errors.
 */
export async function stitchPanorama(input: EdgeInput, workDir: string, signal?: AbortSignal): Promise<EdgePanorama> {
  const started = performance.now();
  const output = join(workDir, 'panorama.mp4');
  if (input.cameraPaths.length === 1 && !input.calibrationPath) {
    await copyFile(input.cameraPaths[0] as string, output);
    return { ...(await digest(output)), path: output, stitched: false, widthPx: null, heightPx: null, stitchMs: 0 };
  }
  if (!input.calibrationPath) {
    throw new PolyvisionError(
      'demo_calibration_mismatch',
      `${input.cameraPaths.length} cameras need a venue calibration (--calibration venue.json) to be stitched`,
    );
  }
  const venue = await readCalibration(input.calibrationPath);
  if (venue.cameras.length !== input.cameraPaths.length) {
    throw new PolyvisionError(
      'demo_calibration_mismatch',
      `the calibration describes ${venue.cameras.length} cameras, but ${input.cameraPaths.length} videos were given`,
    );
  }
  const byName = new Map(input.cameraPaths.map((p) => [basename(p).replace(/\.[^.]+$/, ''), p]));
  const inputs = venue.cameras.map((camera, i) => ({
    cameraId: camera.id,
    path: byName.get(camera.id) ?? (input.cameraPaths[i] as string),
  }));
  const stitcher = await createStitcher(venue, { workDir: join(workDir, 'maps'), preset: 'veryfast' });
  await stitcher.stitch(inputs, output, signal);
  return {
    ...(await digest(output)),
    path: output,
    stitched: true,
    widthPx: stitcher.widthPx,
    heightPx: stitcher.heightPx,
    stitchMs: Math.round(performance.now() - started),
  };
}

async function digest(path: string): Promise<{ sizeBytes: number; sha256: string }> {
  const hash = createHash('sha256');
  await pipeline(createReadStream(path), hash);
  return { sizeBytes: (await stat(path)).size, sha256: hash.digest('hex') };
}

/** One answer the edge got while uploading. */
export interface UploadTry {
  ingestUrl: string;
  outcome: 'uploaded' | 'insufficient_storage' | 'failed';
  message?: string;
}

/**
 * Uploads the panorama with the edge's tus client (resumable, chunked), to the
 * ingest replicas in turn; on a final `507` it waits the `Retry-After` the
 * ingest sent and tries again, at most `maxTries` times.
 *
 * @throws PolyvisionError the last ingest error after `maxTries`.
 */
export async function uploadPanorama(options: {
  panorama: EdgePanorama;
  ingestUrls: string[];
  token: string;
  organizationId: string;
  matchId: string;
  maxTries?: number;
  signal?: AbortSignal;
  onProgress?: (sentBytes: number, totalBytes: number) => void;
}): Promise<{ tries: UploadTry[]; uploadUrl: string }> {
  const tries: UploadTry[] = [];
  const maxTries = options.maxTries ?? 5;
  let uploadUrl: string | null = null;
  for (let n = 0; ; n++) {
    const ingestUrl = options.ingestUrls[n % options.ingestUrls.length] as string;
    try {
      const outcome = await tusUpload({
        path: options.panorama.path,
        sizeBytes: options.panorama.sizeBytes,
        endpoint: `${ingestUrl}/api/v1/uploads`,
        uploadUrl,
        token: options.token,
        metadata: {
          organization_id: options.organizationId,
          match_id: options.matchId,
          kind: 'panorama',
          filename: 'panorama.mp4',
          sha256: options.panorama.sha256,
        },
        chunkSizeBytes: 4 * 1024 * 1024,
        onUploadUrl: (url) => {
          uploadUrl = url;
        },
        ...(options.onProgress ? { onProgress: options.onProgress } : {}),
        ...(options.signal ? { signal: options.signal } : {}),
      });
      tries.push({ ingestUrl, outcome: 'uploaded' });
      return { tries, uploadUrl: outcome.uploadUrl };
    } catch (error) {
      const e = error instanceof PolyvisionError ? error : new PolyvisionError('upload_failed', String(error));
      const insufficient = e.code === 'ingest_insufficient_storage';
      tries.push({ ingestUrl, outcome: insufficient ? 'insufficient_storage' : 'failed', message: e.message });
      if (n + 1 >= maxTries || e.code === 'aborted' || e.code === 'ingest_unauthorized') throw e;
      const retryAfterMs = typeof e.details?.retry_after_ms === 'number' ? e.details.retry_after_ms : 1_000;
      await abortableSleep(Math.min(retryAfterMs, 30_000), options.signal);
    }
  }
}
