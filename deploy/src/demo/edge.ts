import { createHash } from 'node:crypto';
import { createReadStream } from 'node:fs';
import { copyFile, readFile, stat, writeFile } from 'node:fs/promises';
import { basename, join } from 'node:path';
import { pipeline } from 'node:stream/promises';
import {
  Alarms,
  createStitcher,
  MATCH_END_SOURCE,
  type PitchRegistration,
  readPitchPoints,
  registerPitch,
  Spool,
  selfCalibrate,
  Uploader,
} from '@polyvision/edge';
import {
  type MatchEndMarker,
  PolyvisionError,
  type VenueCalibration,
  venueCalibrationSchema,
} from '@polyvision/shared';
import { convertToMp4, needsMp4Conversion } from './convert-input.ts';
import type { PanoramaSegment } from './segment-panorama.ts';

/** Width cap of the panorama when the demo self-calibrates two cameras, pixels. */
export const DEMO_PANORAMA_MAX_WIDTH_PX = 5120;
/**
 * Pixel cap of the panorama (before its crop to what the cameras see) when the demo self-calibrates two
 * cameras: under one source camera's 5.3 Mpx. The width alone does not bound it since the panorama is
 * cylindrical (the tsukuba pair: 5120 wide would be 4596×1272, 5.8 Mpx).
 */
export const DEMO_PANORAMA_MAX_PIXELS = 5_000_000;

/** What the demo edge stitches. */
export interface EdgeInput {
  /** Camera videos; one video = a one-camera rig (no stitching). */
  cameraPaths: string[];
  /** venue.json; required with several cameras. */
  calibrationPath: string | null;
  /** pitch-points.json: registers the venue's panorama to the pitch (metres); needs a stitched rig. */
  pitchPointsPath?: string | null;
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
  /**
   * The venue calibration the panorama was stitched with (its pixel frame), sent with the match;
   * null for a one-camera rig without one, and for a venue whose pitch frame is not registered
   * (a self-calibration without pitch points: analytics then stay in pixels).
   */
  venue: VenueCalibration | null;
  /** The self-calibration made from the footage (2 cameras without --calibration), else null. */
  selfCalibration: { venuePath: string; venue: VenueCalibration; calibrationMs: number } | null;
  /** The pitch registration from `pitchPointsPath`, else null. */
  pitchRegistration: PitchRegistration | null;
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
 * With `pitchPointsPath`, the venue's panorama is registered to the pitch first
 * (`registerPitch`), so the venue travels with the match and the analytics are in metres.
 *
 * @throws PolyvisionError `demo_calibration_invalid`, `demo_calibration_mismatch`
 *   (cameras and calibration disagree), the stitcher's errors; ValidationError
 *   `pitch_points_*` from the pitch points.
 */
export async function stitchPanorama(input: EdgeInput, workDir: string, signal?: AbortSignal): Promise<EdgePanorama> {
  const started = performance.now();
  const output = join(workDir, 'panorama.mp4');
  if (input.cameraPaths.length === 1 && !input.calibrationPath) {
    const camera = input.cameraPaths[0] as string;
    if (needsMp4Conversion(camera)) await convertToMp4(camera, output, signal);
    else await copyFile(camera, output);
    return {
      ...(await digest(output)),
      path: output,
      stitched: false,
      widthPx: null,
      heightPx: null,
      stitchMs: 0,
      venue: null,
      selfCalibration: null,
      pitchRegistration: null,
    };
  }
  let selfCalibration: EdgePanorama['selfCalibration'] = null;
  // Read before calibrating: a file that cannot be used fails at once, not after the calibration.
  const pitchPoints = input.pitchPointsPath ? await readPitchPoints(input.pitchPointsPath) : null;
  if (!input.calibrationPath && input.cameraPaths.length !== 2) {
    throw new PolyvisionError(
      'demo_calibration_mismatch',
      `${input.cameraPaths.length} cameras need a venue calibration (--calibration venue.json) to be stitched`,
    );
  }
  if (!input.calibrationPath) {
    // A club's two cameras and no calibration: the edge calibrates the rig from the footage.
    const calibrationStarted = performance.now();
    // 5120 px wide and 5 Mpx at most (under one source camera's 5.3 Mpx) keep the demo's stitch and detection
    // practical on a small host; `polyvision edge calibrate` defaults to 7680 px wide, no pixel cap.
    const calibrated = await selfCalibrate(input.cameraPaths, {
      venueId: 'demo-venue',
      maxPanoramaWidthPx: DEMO_PANORAMA_MAX_WIDTH_PX,
      maxPanoramaPixels: DEMO_PANORAMA_MAX_PIXELS,
      ...(signal ? { signal } : {}),
    });
    const venuePath = join(workDir, 'venue.json');
    await writeFile(venuePath, `${JSON.stringify(calibrated.venue, null, 2)}\n`);
    selfCalibration = {
      venuePath,
      venue: calibrated.venue,
      calibrationMs: Math.round(performance.now() - calibrationStarted),
    };
  }
  let venue = selfCalibration ? selfCalibration.venue : await readCalibration(input.calibrationPath as string);
  let pitchRegistration: PitchRegistration | null = null;
  if (pitchPoints) {
    const registered = registerPitch(venue, pitchPoints);
    venue = registered.venue;
    pitchRegistration = registered.registration;
    if (selfCalibration) {
      selfCalibration.venue = venue;
      await writeFile(selfCalibration.venuePath, `${JSON.stringify(venue, null, 2)}\n`);
    }
  }
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
    venue: stitcher.venue.quality?.pitch_registered === false ? null : stitcher.venue,
    selfCalibration,
    pitchRegistration,
  };
}

async function digest(path: string): Promise<{ sizeBytes: number; sha256: string }> {
  const hash = createHash('sha256');
  await pipeline(createReadStream(path), hash);
  return { sizeBytes: (await stat(path)).size, sha256: hash.digest('hex') };
}

/** What the edge's uploader went through. */
export interface UploadReport {
  ingestUrl: string;
  /**
   * Journal state of the panorama segments at the end: `confirmed` (sha256 confirmed by the core)
   * or `deleted` when every one is; else the first other state.
   */
  state: string;
  /** Panorama segments uploaded, in order, then the end marker. */
  segments: number;
  /** Final `507`s the ingest sent back (none when a retry on another SE inside ingest sufficed). */
  insufficientStorageResponses: number;
  /** Failed attempts of any kind. */
  failures: number;
}

/**
 * Hands the panorama segments to the edge's durable spool (`edge/src/spool`:
 * sqlite journal, fsync, sha256) in match order, as the edge's recorder does
 * (kind `panorama`, source `panorama`, seq = slot, so ingest sees
 * `<match>__panorama__panorama__<slot>.mp4` and makes `match.segment`s), and
 * lets the edge's uploader (`edge/src/upload`: tus, resumable, honours
 * `Retry-After` on a final 507, confirms the sha256) drain each one to
 * `ingestUrl`, until the core confirms all its copies, before the next is spooled; then the end-of-match marker
 * (`match-end-<last slot>.json`, `match.end`) closes the match's one job.
 * The spool works on copies; the segments stay in place.
 * The venue calibration goes first, through {@link uploadCalibration}.
 *
 * @throws PolyvisionError `demo_upload_failed` with the uploader's last error when
 *   a file is not confirmed within `timeoutMs`; `aborted` when `signal` fires.
 */
export async function uploadPanorama(options: {
  segments: readonly PanoramaSegment[];
  /** The segments' nominal length (ingest's `INGEST_SEGMENT_DURATION_S`), seconds. */
  segmentS: number;
  ingestUrl: string;
  token: string;
  organizationId: string;
  matchId: string;
  spoolDir: string;
  /** @defaultValue 300_000 */
  timeoutMs?: number;
  signal?: AbortSignal;
  onProgress?: (sentBytes: number, totalBytes: number) => void;
}): Promise<UploadReport> {
  const alarms = new Alarms();
  const spool = await Spool.open({ dir: options.spoolDir, alarms, minFreeBytes: 0 });
  try {
    const sizes = await Promise.all(options.segments.map(async (s) => (await stat(s.path)).size));
    const totalBytes = sizes.reduce((a, b) => a + b, 0);
    let doneBytes = 0;
    const uploader = new Uploader({
      spool,
      alarms,
      ingestUrl: options.ingestUrl,
      token: options.token,
      organizationId: options.organizationId,
      chunkSizeBytes: 4 * 1024 * 1024,
      baseDelayMs: 500,
      maxRetryAfterMs: 30_000,
      ...(options.onProgress
        ? { onProgress: (_row, sent) => options.onProgress?.(Math.min(totalBytes, doneBytes + sent), totalBytes) }
        : {}),
    });
    const timeout = AbortSignal.timeout(options.timeoutMs ?? 300_000);
    const drainSignal = options.signal ? AbortSignal.any([options.signal, timeout]) : timeout;
    const states: string[] = [];
    for (const [i, segment] of options.segments.entries()) {
      const copy = join(options.spoolDir, `incoming-panorama-${segment.index}.mp4`);
      await copyFile(segment.path, copy);
      const row = await spool.add(copy, {
        matchId: options.matchId,
        kind: 'panorama',
        source: 'panorama',
        seq: segment.index,
      });
      await uploader.drain(drainSignal, { untilConfirmed: true });
      options.signal?.throwIfAborted();
      const state = spool.journal.get(row.id)?.state ?? 'missing';
      if (state !== 'confirmed' && state !== 'deleted') {
        throw new PolyvisionError(
          'demo_upload_failed',
          `the edge could not upload panorama segment ${segment.index} (state ${state}): ${uploader.status().lastError ?? 'no error recorded'}`,
        );
      }
      states.push(state);
      doneBytes += sizes[i] ?? 0;
    }
    // The recording is over: the end marker (as the edge's MatchRecorder spools it when the window
    // closes) closes the match's one job after its last segment (issue #18).
    const lastSlot = options.segments.at(-1)?.index ?? null;
    const markerPath = join(options.spoolDir, 'match-end.json');
    const marker: MatchEndMarker = {
      match_id: options.matchId,
      last_slot: lastSlot,
      panorama_segments: options.segments.length,
      segment_duration_s: options.segmentS,
      ended_at: new Date().toISOString(),
    };
    await writeFile(markerPath, `${JSON.stringify(marker, null, 2)}\n`);
    const end = await spool.add(markerPath, {
      matchId: options.matchId,
      kind: 'artifact',
      source: MATCH_END_SOURCE,
      seq: lastSlot ?? 0,
    });
    await uploader.drain(drainSignal, { untilConfirmed: true });
    options.signal?.throwIfAborted();
    const endState = spool.journal.get(end.id)?.state ?? 'missing';
    if (endState !== 'confirmed' && endState !== 'deleted') {
      throw new PolyvisionError(
        'demo_upload_failed',
        `the edge could not upload the end-of-match marker (state ${endState}): ${uploader.status().lastError ?? 'no error recorded'}`,
      );
    }
    const status = uploader.status();
    return {
      ingestUrl: options.ingestUrl,
      state: states.find((s) => s !== 'deleted') ?? 'deleted',
      segments: options.segments.length,
      insufficientStorageResponses: status.insufficientStorageResponses,
      failures: status.failures,
    };
  } finally {
    spool.journal.close();
  }
}

/**
 * Uploads the venue calibration the panorama was stitched with as the match's
 * `venue.json` artifact (spool identity: kind `artifact`, source `venue`,
 * seq 0, as the edge's MatchRecorder spools it), through the same durable
 * spool and uploader as the panorama, and waits for the core's sha256
 * confirmation (all its copies verified). Run it before {@link uploadPanorama}: ingest gives the
 * panorama's job the latest calibration catalogued for the match.
 *
 * @returns the journal state (`confirmed` or `deleted`).
 * @throws PolyvisionError `demo_upload_failed` when it is not confirmed within
 *   `timeoutMs`; `aborted` when `signal` fires.
 */
export async function uploadCalibration(options: {
  venue: VenueCalibration;
  ingestUrl: string;
  token: string;
  organizationId: string;
  matchId: string;
  spoolDir: string;
  /** @defaultValue 60_000 */
  timeoutMs?: number;
  signal?: AbortSignal;
}): Promise<string> {
  const alarms = new Alarms();
  const spool = await Spool.open({ dir: options.spoolDir, alarms, minFreeBytes: 0 });
  try {
    const path = join(options.spoolDir, 'incoming-venue.json');
    await writeFile(path, `${JSON.stringify(options.venue, null, 2)}\n`);
    const row = await spool.add(path, { matchId: options.matchId, kind: 'artifact', source: 'venue', seq: 0 });
    const uploader = new Uploader({
      spool,
      alarms,
      ingestUrl: options.ingestUrl,
      token: options.token,
      organizationId: options.organizationId,
      baseDelayMs: 500,
      maxRetryAfterMs: 30_000,
    });
    const timeout = AbortSignal.timeout(options.timeoutMs ?? 300_000);
    await uploader.drain(options.signal ? AbortSignal.any([options.signal, timeout]) : timeout, {
      untilConfirmed: true,
    });
    options.signal?.throwIfAborted();
    const state = spool.journal.get(row.id)?.state ?? 'missing';
    if (state !== 'confirmed' && state !== 'deleted') {
      throw new PolyvisionError(
        'demo_upload_failed',
        `the edge could not upload the venue calibration (state ${state}): ${uploader.status().lastError ?? 'no error recorded'}`,
      );
    }
    return state;
  } finally {
    spool.journal.close();
  }
}
