/**
 * The real rig's geometry, three ways: the homography and lens fitted on the whole overlap with a planar
 * panorama (the default before 2026-11-30), fitted on the pitch plane (`homographyFrom: 'pitch'`,
 * edge/src/calibration/self/pitch-plane.ts) with a planar panorama, and on the pitch plane with a cylindrical
 * panorama (panorama-layout.ts; the default since). Self-calibrates the tsukuba pair each way, stitches one
 * frame with each and measures
 * - where the inlier matches lie (rows of camera A, distorted pixels) and the lens chosen,
 * - the seam error with the homographies alone and after the seam alignment, and the largest warp it needed,
 * - the kink of the near touchline at the seam: in the stitched frame, how far the touchline within 3 % of the
 *   width of where the seam crosses it lies from a parabola fitted to it 3–20 % either side (median, px;
 *   straight or smoothly curved: ~0; a kink leaves its vertex off),
 * - the panorama's size, pixel density on the pitch lines (min / median) and unseen share,
 * - the pitch registered from the 17 markings of bench/label/tsukuba-pair/pitch-points.json (read off the
 *   camera frames by eye): the fit's RMS and worst point, m.
 * Writes bench/results/edge-rig-geometry.json and docs/stitch-tsukuba-geometry.jpg (the three, top to bottom).
 *
 * Usage: node bench/edge/rig-geometry.ts [--at-s 2]
 */
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { createStitcher, readPitchPoints, registerPitch, selfCalibrate } from '../../edge/src/index.ts';
import { oneFrameClips, runFfmpeg, tsukubaPairOrSkip } from './tsukuba-pair.ts';

const { values } = parseArgs({ options: { 'at-s': { type: 'string', default: '2' } } });
const cams = tsukubaPairOrSkip();

/**
 * The near touchline in a grey panorama: per column in [x0, x1), the first row from the top of the lowest 40 %
 * that is a thin bright ridge (grey ≥ 160 and at least 40 above both rows 8 px above and below: paint on turf;
 * the lettering lies below the touchline). Columns without one are left out.
 */
function touchlineRows(gray: Uint8Array, widthPx: number, heightPx: number, x0: number, x1: number) {
  const columns: Array<[number, number]> = [];
  for (let x = Math.max(0, Math.round(x0)); x < Math.min(widthPx, Math.round(x1)); x++) {
    for (let y = Math.round(0.6 * heightPx); y < heightPx - 8; y++) {
      const at = (r: number) => gray[r * widthPx + x] as number;
      if (at(y) >= 160 && at(y) - Math.max(at(y - 8), at(y + 8)) >= 40) {
        columns.push([x, y]);
        break;
      }
    }
  }
  return columns;
}

/** Least-squares parabola y = c0 + c1·t + c2·t² (t = (x − xc) / scale) through `points`: normal equations. */
function parabola(points: ReadonlyArray<[number, number]>, xc: number, scale: number): (x: number) => number {
  const a = [0, 0, 0, 0, 0, 0, 0, 0, 0];
  const b = [0, 0, 0];
  for (const [x, y] of points) {
    const row = [1, (x - xc) / scale, ((x - xc) / scale) ** 2];
    for (let i = 0; i < 3; i++) {
      b[i] = (b[i] as number) + (row[i] as number) * y;
      for (let j = 0; j < 3; j++) a[i * 3 + j] = (a[i * 3 + j] as number) + (row[i] as number) * (row[j] as number);
    }
  }
  // Gaussian elimination on the 3×3 system (positive definite: no pivoting needed).
  for (let i = 0; i < 3; i++) {
    for (let k = i + 1; k < 3; k++) {
      const f = (a[k * 3 + i] as number) / (a[i * 3 + i] as number);
      for (let j = i; j < 3; j++) a[k * 3 + j] = (a[k * 3 + j] as number) - f * (a[i * 3 + j] as number);
      b[k] = (b[k] as number) - f * (b[i] as number);
    }
  }
  const c = [0, 0, 0];
  for (let i = 2; i >= 0; i--) {
    let v = b[i] as number;
    for (let j = i + 1; j < 3; j++) v -= (a[i * 3 + j] as number) * (c[j] as number);
    c[i] = v / (a[i * 3 + i] as number);
  }
  return (x) => {
    const t = (x - xc) / scale;
    return (c[0] as number) + (c[1] as number) * t + (c[2] as number) * t * t;
  };
}

/**
 * How far the near touchline leaves a smooth curve where the seam crosses it: a parabola is fitted (robustly:
 * three passes, dropping columns more than 20, 6, then 3 px off) to the touchline 3–20 % of the width either side
 * of the seam, and the touchline within 3 % of the seam is compared with it: the median distance, px (a kink
 * leaves its vertex off any smooth curve; a straight or smoothly curved line stays on it). Also the fit's RMS.
 */
function seamKink(gray: Uint8Array, widthPx: number, heightPx: number, seamX: number) {
  const all = touchlineRows(gray, widthPx, heightPx, seamX - 0.2 * widthPx, seamX + 0.2 * widthPx);
  const near = all.filter(([x]) => Math.abs(x - seamX) <= 0.03 * widthPx);
  let away = all.filter(([x]) => Math.abs(x - seamX) > 0.03 * widthPx);
  let curve = parabola(away, seamX, 0.2 * widthPx);
  for (const limit of [20, 6, 3]) {
    away = away.filter(([x, y]) => Math.abs(curve(x) - y) <= limit);
    curve = parabola(away, seamX, 0.2 * widthPx);
  }
  const offNear = near.map(([x, y]) => Math.abs(curve(x) - y)).sort((p, q) => p - q);
  const rms = Math.sqrt(away.reduce((sum, [x, y]) => sum + (curve(x) - y) ** 2, 0) / away.length);
  return {
    seam_offset_px: offNear[offNear.length >> 1] ?? Number.NaN,
    fit_rms_px: rms,
    columns: { away: away.length, near: near.length },
  };
}

const pitchPoints = await readPitchPoints('bench/label/tsukuba-pair/pitch-points.json');
const variants = [
  { name: 'overlap-planar', homographyFrom: 'overlap', projection: 'planar' },
  { name: 'pitch-planar', homographyFrom: 'pitch', projection: 'planar' },
  { name: 'pitch-cylindrical', homographyFrom: 'pitch', projection: 'cylindrical' },
] as const;
const work = await mkdtemp(join(tmpdir(), 'bench-rig-geometry-'));
try {
  const frames = await oneFrameClips(cams, work, Number(values['at-s']));
  const rows: Record<string, unknown>[] = [];
  const pictures: string[] = [];
  for (const { name, homographyFrom, projection } of variants) {
    const t0 = performance.now();
    const cal = await selfCalibrate(cams, {
      homographyFrom,
      projection,
      onWarning: (l) => process.stderr.write(`${name}: ${l}\n`),
    });
    const calibrationS = (performance.now() - t0) / 1000;
    const { venue } = cal;
    const stitcher = await createStitcher(venue, {
      workDir: join(work, name),
      encoder: 'libx264',
      quality: 12,
    });
    const pano = join(work, `${name}.mp4`);
    await stitcher.stitch(frames, pano);
    // A 1920-wide picture of the frame.
    const picture = join(work, `${name}.png`);
    await runFfmpeg(['-i', pano, '-frames:v', '1', '-vf', 'scale=1920:-2', picture]);
    pictures.push(picture);
    const ys = cal.inlierMatches.map((m) => m.a[1]).sort((a, b) => a - b);
    const q = (p: number) => Math.round(ys[Math.floor(p * (ys.length - 1))] ?? Number.NaN);
    let registration: Record<string, unknown>;
    try {
      const r = registerPitch(venue, pitchPoints, { maxPointErrorM: 1e6 }).registration;
      registration = { rms_m: r.rmsErrorM, max_m: r.maxErrorM, worst: r.worstPoint };
    } catch (error) {
      registration = { error: (error as Error).message };
    }
    // The near touchline either side of where the seam crosses it.
    const { width_px: w, height_px: h } = venue.panorama;
    const grayPath = join(work, `${name}.gray`);
    await runFfmpeg(['-i', pano, '-frames:v', '1', '-f', 'rawvideo', '-pix_fmt', 'gray', grayPath]);
    const gray = new Uint8Array(await readFile(grayPath));
    const seam = venue.panorama.seam_x_px ?? [];
    const seamX = seam.length ? (seam[Math.round(0.8 * (seam.length - 1))] as number) : w / 2;
    const touchline = seamKink(gray, w, h, seamX);
    const row = {
      variant: name,
      homography_from: homographyFrom,
      projection: venue.panorama.projection,
      cylinder_focal_px: venue.panorama.cylinder?.focal_px,
      calibration_s: calibrationS,
      lambda: cal.lenses[0]?.lambda,
      inliers: venue.quality?.inliers,
      inlier_rows_a_px: { min: q(0), p50: q(0.5), max: q(1) },
      seam_error_homography_px: cal.seamAlignment?.seamErrorBeforePx,
      seam_error_aligned_px: { mean: venue.quality?.seam_error_mean_px, p95: venue.quality?.seam_error_p95_px },
      seam_warp_px: cal.seamAlignment?.shiftPx,
      near_touchline: touchline,
      panorama: `${venue.panorama.width_px}x${venue.panorama.height_px}`,
      pixel_density: venue.quality?.pixel_density,
      unseen_fraction: venue.quality?.unseen_fraction,
      crop_method: cal.crop?.method,
      pitch_registration: registration,
    };
    process.stderr.write(`${JSON.stringify(row)}\n`);
    rows.push(row);
  }
  await runFfmpeg([
    ...pictures.flatMap((p) => ['-i', p]),
    '-filter_complex',
    `${pictures.map((_, i) => `[${i}:v]`).join('')}vstack=inputs=${pictures.length}`,
    '-q:v',
    '3',
    'docs/stitch-tsukuba-geometry.jpg',
  ]);
  const result = { date: new Date().toISOString(), host_load_1min: loadavg()[0], at_s: Number(values['at-s']), rows };
  await writeFile('bench/results/edge-rig-geometry.json', `${JSON.stringify(result, null, 2)}\n`);
} finally {
  await rm(work, { recursive: true, force: true });
}
