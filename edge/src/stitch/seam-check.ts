/**
 * The live seam check: a camera that is bumped, turned by the wind or
 * re-mounted no longer matches the venue calibration, and its seam opens. Every
 * `panorama.seam_check_interval_s` the edge takes one frame of each camera (0.5 s in) from
 * a segment it has just stitched, matches features across each seam (ORB,
 * features.ts), maps both sides of every match into the panorama exactly as the
 * stitcher does (lens, `image_to_panorama`, `panorama_warp`) and measures how far
 * apart they land. The median distance is the seam error (matches on moving
 * players are in step: the frames are taken at the same instant, after the
 * calibrated time offset); above `panorama.seam_alarm_px` the alarm
 * `seam_misaligned` is raised, and cleared once a later check is back under it.
 */
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import {
  IDENTITY_PROJECTION,
  type Logger,
  type PanoramaProjection,
  panoramaProjectionOf,
  resolveFfmpegPath,
  spawnChild,
  type VenueCalibration,
  type VenueCamera,
} from '@polyvision/shared';
import type { Alarms } from '../alarms/index.ts';
import { matchFeatures } from '../calibration/self/features.ts';
import { isPinhole, undistortDivision } from '../calibration/self/lens-distortion.ts';
import { apply3 } from '../calibration/self/panorama-plane.ts';
import { warpAt } from '../calibration/self/seam-alignment.ts';
import { type RemapMaps, UNMAPPED } from './remap-maps.ts';

/** One seam's measurement. */
export interface SeamMeasurement {
  /** The two cameras either side of the seam, venue ids. */
  cameras: [string, string];
  /** Matches inside the overlap that were measured. */
  matches: number;
  /** Median panorama distance between the two sides of the matches, panorama pixels (null: too few matches). */
  medianPx: number | null;
  /** 90th percentile, panorama pixels. */
  p90Px: number | null;
}

/** A grey frame, row-major 8-bit. */
export interface GrayFrame {
  widthPx: number;
  heightPx: number;
  data: Uint8Array;
}

/** Undistorted pixel of a recorded one, the stitcher's lens model (division model, else Brown by fixed point). */
function undistort(cam: VenueCamera, u: number, v: number): [number, number] {
  const dm = cam.division_model;
  if (dm) {
    return undistortDivision({ lambda: dm.lambda, cx: dm.center_px[0], cy: dm.center_px[1], normPx: dm.norm_px }, u, v);
  }
  if (isPinhole(cam.distortion)) return [u, v];
  const { fx, fy, cx, cy } = cam.intrinsics;
  const { k1, k2, k3 } = cam.distortion;
  const xd = (u - cx) / fx;
  const yd = (v - cy) / fy;
  let x = xd;
  let y = yd;
  for (let i = 0; i < 10; i++) {
    const r2 = x * x + y * y;
    const f = 1 + k1 * r2 + k2 * r2 * r2 + k3 * r2 * r2 * r2;
    x = xd / f;
    y = yd / f;
  }
  return [cx + fx * x, cy + fy * y];
}

/**
 * Where a recorded pixel of a camera shows in the panorama: undistorted,
 * through `image_to_panorama` (to the panorama's plane, then by `projection`
 * onto a cylindrical panorama), then the inverse of the camera's
 * `panorama_warp` (the panorama pixel q with q + warp(q) = p, by fixed point).
 */
export function panoramaPositionOf(
  cam: VenueCamera,
  u: number,
  v: number,
  projection: PanoramaProjection = IDENTITY_PROJECTION,
): [number, number] {
  const [x, y] = undistort(cam, u, v);
  const [px, py] = projection.fromPlane(...apply3(cam.image_to_panorama.flat(), x, y));
  const warp = cam.panorama_warp;
  if (!warp || !Number.isFinite(px)) return [px, py];
  let qx = px;
  let qy = py;
  for (let i = 0; i < 8; i++) {
    const [dx, dy] = warpAt(warp, qx, qy);
    qx = px - dx;
    qy = py - dy;
  }
  return [qx, qy];
}

/**
 * Per camera, the recorded pixels that the panorama shows where the camera's
 * seam neighbour also sees (255 = in an overlap), from the stitcher's maps,
 * grown by `growPx` (the maps sample every panorama pixel, not every source pixel).
 */
export function overlapMasks(venue: VenueCalibration, maps: RemapMaps, growPx = 4): Uint8Array[] {
  const n = maps.widthPx * maps.heightPx;
  return maps.cameras.map((cam, i) => {
    const { width_px: w, height_px: h } = venue.cameras[i] as VenueCamera;
    const mask = new Uint8Array(w * h);
    const neighbours = [maps.cameras[i - 1], maps.cameras[i + 1]].filter((c) => c !== undefined);
    for (let k = 0; k < n; k++) {
      const sx = cam.xmap[k] as number;
      if (sx === UNMAPPED) continue;
      if (!neighbours.some((o) => o.xmap[k] !== UNMAPPED)) continue;
      const sy = cam.ymap[k] as number;
      for (let dy = -growPx; dy <= growPx; dy += growPx) {
        for (let dx = -growPx; dx <= growPx; dx += growPx) {
          const x = sx + dx;
          const y = sy + dy;
          if (x >= 0 && y >= 0 && x < w && y < h) mask[y * w + x] = 255;
        }
      }
    }
    // Fill the grid's gaps: a pixel between marked ones on its row is marked.
    for (let y = 0; y < h; y++) {
      let last = -1;
      for (let x = 0; x < w; x++) {
        if (!mask[y * w + x]) continue;
        if (last >= 0 && x - last <= 4 * growPx) mask.fill(255, y * w + last, y * w + x);
        last = x;
      }
    }
    return mask;
  });
}

/**
 * Measures every seam (camera i with camera i + 1, venue order) on one frame per camera.
 * @param frames - per camera, venue order; null where a camera has no frame (its seams are skipped).
 * @param masks - overlapMasks() of the stitcher's maps.
 */
export async function measureSeams(
  venue: VenueCalibration,
  frames: readonly (GrayFrame | null)[],
  masks: readonly Uint8Array[],
  options: { maxFeatures?: number; minMatches?: number } = {},
): Promise<SeamMeasurement[]> {
  const out: SeamMeasurement[] = [];
  for (let i = 0; i + 1 < venue.cameras.length; i++) {
    const a = venue.cameras[i] as VenueCamera;
    const b = venue.cameras[i + 1] as VenueCamera;
    const fa = frames[i];
    const fb = frames[i + 1];
    if (!fa || !fb) continue;
    const found = await matchFeatures(fa, fb, {
      maxFeatures: options.maxFeatures ?? 3000,
      masks: [masks[i] ?? null, masks[i + 1] ?? null],
    });
    const distances: number[] = [];
    const projection = panoramaProjectionOf(venue.panorama);
    for (const m of found.matches) {
      const [ax, ay] = panoramaPositionOf(a, m.a[0], m.a[1], projection);
      const [bx, by] = panoramaPositionOf(b, m.b[0], m.b[1], projection);
      const d = Math.hypot(ax - bx, ay - by);
      if (Number.isFinite(d)) distances.push(d);
    }
    distances.sort((p, q) => p - q);
    const enough = distances.length >= (options.minMatches ?? 8);
    const at = (p: number) =>
      distances[Math.min(distances.length - 1, Math.floor(p * (distances.length - 1)))] as number;
    out.push({
      cameras: [a.id, b.id],
      matches: distances.length,
      medianPx: enough ? at(0.5) : null,
      p90Px: enough ? at(0.9) : null,
    });
  }
  return out;
}

/**
 * Decodes one grey frame of a video at `atS` seconds (full resolution).
 * @throws PolyvisionError `child_failed` when ffmpeg cannot read it.
 */
export async function grayFrameAt(
  path: string,
  size: { widthPx: number; heightPx: number },
  atS: number,
  ffmpegPath = resolveFfmpegPath(),
): Promise<GrayFrame | null> {
  const dir = await mkdtemp(join(tmpdir(), 'pv-seam-'));
  try {
    const raw = join(dir, 'frame.gray');
    const args = ['-hide_banner', '-nostdin', '-loglevel', 'error', '-y'];
    if (atS > 0) args.push('-ss', atS.toFixed(3));
    args.push('-i', path, '-frames:v', '1', '-vf', `scale=${size.widthPx}:${size.heightPx}`, '-pix_fmt', 'gray');
    args.push('-f', 'rawvideo', raw);
    await spawnChild(ffmpegPath, args, { stdout: 'ignore' }).done;
    const data = await readFile(raw);
    return data.length === size.widthPx * size.heightPx ? { ...size, data } : null;
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
}

/** Options of {@link SeamCheck}. */
export interface SeamCheckOptions {
  /** Seconds between two checks. @defaultValue 60 */
  intervalS?: number;
  /** Median seam error above which `seam_misaligned` is raised, panorama pixels. @defaultValue 4 */
  alarmPx?: number;
  alarms?: Alarms;
  logger?: Logger;
  ffmpegPath?: string;
  now?: () => number;
}

/**
 * Runs the seam check at most every `intervalS` on the segments the stitcher
 * gets, keeps the last result (the `edge_seam_error_px` metric) and raises or
 * clears `seam_misaligned` (subject: the seam, `cam-a|cam-b`).
 */
export class SeamCheck {
  readonly #venue: VenueCalibration;
  readonly #masks: Uint8Array[];
  readonly #intervalMs: number;
  readonly #alarmPx: number;
  readonly #options: SeamCheckOptions;
  readonly #now: () => number;
  #lastAtMs = Number.NEGATIVE_INFINITY;
  /** The last measurement of every seam. */
  last: SeamMeasurement[] = [];

  constructor(venue: VenueCalibration, maps: RemapMaps, options: SeamCheckOptions = {}) {
    this.#venue = venue;
    this.#masks = overlapMasks(venue, maps);
    this.#intervalMs = (options.intervalS ?? 60) * 1000;
    this.#alarmPx = options.alarmPx ?? 4;
    this.#options = options;
    this.#now = options.now ?? Date.now;
  }

  /** The worst seam's median error of the last check, panorama pixels (NaN before any measured check). */
  get errorPx(): number {
    const values = this.last.map((m) => m.medianPx).filter((v): v is number => v !== null);
    return values.length ? Math.max(...values) : Number.NaN;
  }

  /** Whether a check is due now. */
  due(): boolean {
    return this.#now() - this.#lastAtMs >= this.#intervalMs;
  }

  /**
   * Checks the seams on one frame of each camera's segment (0.5 s in, after the
   * camera's `time_offset_s`) when a check is due; never throws (a failed check is logged).
   * @param paths - per camera, venue order; null where a camera has no segment.
   */
  async check(paths: readonly (string | null)[]): Promise<SeamMeasurement[] | null> {
    if (!this.due()) return null;
    this.#lastAtMs = this.#now();
    try {
      const frames = await Promise.all(
        this.#venue.cameras.map((c, i) => {
          const path = paths[i];
          return path
            ? grayFrameAt(
                path,
                { widthPx: c.width_px, heightPx: c.height_px },
                0.5 + (c.time_offset_s ?? 0),
                this.#options.ffmpegPath,
              ).catch(() => null)
            : null;
        }),
      );
      const result = await measureSeams(this.#venue, frames, this.#masks);
      this.last = result;
      for (const m of result) {
        const subject = `${m.cameras[0]}|${m.cameras[1]}`;
        this.#options.logger?.info(
          { seam: subject, seam_error_px: m.medianPx, seam_error_p90_px: m.p90Px, matches: m.matches },
          'seam checked',
        );
        if (m.medianPx === null) continue;
        if (m.medianPx > this.#alarmPx) {
          this.#options.alarms?.raise(
            'seam_misaligned',
            subject,
            `the seam between ${m.cameras[0]} and ${m.cameras[1]} is off by ${m.medianPx.toFixed(1)} px (alarm above ${this.#alarmPx} px): a camera has moved since the calibration — recalibrate (polyvision edge calibrate)`,
            { details: { seam_error_px: m.medianPx, seam_error_p90_px: m.p90Px, matches: m.matches } },
          );
        } else {
          this.#options.alarms?.clear('seam_misaligned', subject);
        }
      }
      return result;
    } catch (error) {
      this.#options.logger?.warn({ err: (error as Error).message }, 'seam check failed');
      return null;
    }
  }
}
