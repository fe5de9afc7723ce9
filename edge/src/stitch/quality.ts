/**
 * Stitching quality measures (reported in bench/README.md):
 * - seam misalignment: where two cameras overlap in the panorama, the
 *   distance between the true panorama positions (ground-truth homographies)
 *   of the two source pixels the maps picked;
 * - PSNR of a stitched panorama against a reference (ffmpeg `psnr` filter,
 *   10·log10(255² / MSE), averaged over the planes the way ffmpeg does).
 */
import { type Matrix3x3, PolyvisionError, resolveFfmpegPath, spawnChild } from '@polyvision/shared';
import { projectPixel } from './homography.ts';
import { type RemapMaps, UNMAPPED } from './remap-maps.ts';

/** Misalignment statistics, panorama pixels. */
export interface MisalignmentStats {
  /** Overlap pixel pairs measured. */
  samples: number;
  meanPx: number;
  p95Px: number;
  maxPx: number;
  /** Mean distance between a panorama pixel and where its chosen source pixel truly lands (all cameras). */
  registrationMeanPx: number;
}

/**
 * Measures seam misalignment of `maps` against the ground truth homographies
 * (`image_to_panorama` per camera, same order as `maps.cameras`).
 */
export function seamMisalignment(maps: RemapMaps, truth: readonly Matrix3x3[]): MisalignmentStats {
  const n = maps.widthPx * maps.heightPx;
  const h = truth.map((m) => m.flat());
  const distances: number[] = [];
  let regSum = 0;
  let regCount = 0;
  const pts: Array<[number, number]> = [];
  for (let k = 0; k < n; k++) {
    pts.length = 0;
    const x = k % maps.widthPx;
    const y = (k - x) / maps.widthPx;
    maps.cameras.forEach((cam, i) => {
      const u = cam.xmap[k] as number;
      if (u === UNMAPPED) return;
      const q = projectPixel(h[i] as number[], u, cam.ymap[k] as number);
      if (!Number.isFinite(q[0])) return;
      pts.push(q);
      regSum += Math.hypot(q[0] - x, q[1] - y);
      regCount++;
    });
    for (let a = 0; a < pts.length; a++) {
      for (let b = a + 1; b < pts.length; b++) {
        const p = pts[a] as [number, number];
        const q = pts[b] as [number, number];
        distances.push(Math.hypot(p[0] - q[0], p[1] - q[1]));
      }
    }
  }
  distances.sort((a, b) => a - b);
  const mean = distances.reduce((s, d) => s + d, 0) / Math.max(1, distances.length);
  return {
    samples: distances.length,
    meanPx: mean,
    p95Px: distances[Math.floor(0.95 * (distances.length - 1))] ?? 0,
    maxPx: distances[distances.length - 1] ?? 0,
    registrationMeanPx: regCount === 0 ? 0 : regSum / regCount,
  };
}

/** PSNR in dB per plane and averaged, as ffmpeg's `psnr` filter reports it. */
export interface PsnrResult {
  y: number;
  u: number;
  v: number;
  average: number;
}

/**
 * PSNR of `distortedPath` against `referencePath` (same size and frame count),
 * over all frames.
 *
 * @throws PolyvisionError `psnr_failed` when ffmpeg fails or prints no result.
 */
export async function panoramaPsnr(
  distortedPath: string,
  referencePath: string,
  options: { ffmpegPath?: string; signal?: AbortSignal } = {},
): Promise<PsnrResult> {
  let line = '';
  const child = spawnChild(
    options.ffmpegPath ?? resolveFfmpegPath(),
    ['-hide_banner', '-nostdin', '-i', distortedPath, '-i', referencePath, '-lavfi', 'psnr', '-f', 'null', '-'],
    {
      stdout: 'ignore',
      signal: options.signal,
      onStderrLine: (l) => {
        if (l.includes('PSNR y:')) line = l;
      },
    },
  );
  try {
    await child.done;
  } catch (error) {
    throw new PolyvisionError('psnr_failed', `PSNR of ${distortedPath}: ${(error as Error).message}`, { cause: error });
  }
  const value = (key: string) => {
    const m = new RegExp(`${key}:(inf|[0-9.]+)`).exec(line);
    if (!m) throw new PolyvisionError('psnr_failed', `ffmpeg printed no PSNR (${key}) for ${distortedPath}`);
    return m[1] === 'inf' ? Number.POSITIVE_INFINITY : Number(m[1]);
  };
  return { y: value('y'), u: value('u'), v: value('v'), average: value('average') };
}
