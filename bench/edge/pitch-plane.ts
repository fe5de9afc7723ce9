/**
 * The real rig's geometry fitted on the overlap (the shipped default) against the pitch plane
 * (`homographyFrom: 'pitch'`, edge/src/calibration/self/pitch-plane.ts): self-calibrates the tsukuba pair
 * both ways, stitches one frame with each and measures
 * - where the inlier matches lie (rows of camera A, distorted pixels) and the lens chosen,
 * - the seam error with the homographies alone and after the seam alignment, and the largest warp it needed,
 * - the kink of the near touchline at the seam: the dominant line (Hough) of the panorama's line pixels in a
 *   window left of the seam and one right of it (the lower 60 % of the panorama), the angle between the two,
 * - the panorama's size, pixel density on the pitch lines (min / median) and unseen share.
 * Writes bench/results/edge-pitch-plane.json and docs/stitch-tsukuba-pitch-plane.jpg (overlap above, pitch below).
 *
 * Usage: node bench/edge/pitch-plane.ts [--at-s 2]
 */
import { existsSync } from 'node:fs';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { createStitcher, houghVotes, linePixels, selfCalibrate } from '../../edge/src/index.ts';
import { resolveFfmpegPath, spawnChild } from '../../shared/src/index.ts';

const { values } = parseArgs({ options: { 'at-s': { type: 'string', default: '2' } } });
const ffmpeg = resolveFfmpegPath();
const cams = ['../shared/footage/tsukuba-left.mp4', '../shared/footage/tsukuba-right.mp4'];
if (!cams.every((p) => existsSync(p))) {
  process.stderr.write(`skipped: ${cams.join(', ')} missing\n`);
  process.exit(0);
}
const run = (args: string[]) =>
  spawnChild(ffmpeg, ['-hide_banner', '-nostdin', '-loglevel', 'error', '-y', ...args], { stdout: 'ignore' }).done;

/** Direction of the dominant line of `points` (degrees, 0 = horizontal, clockwise in image rows). */
function dominantLineDeg(points: number[], widthPx: number, heightPx: number): number {
  const lens = { lambda: 0, cx: widthPx / 2, cy: heightPx / 2, normPx: Math.hypot(widthPx, heightPx) / 2 };
  const { votes, rhoBins } = houghVotes(Float64Array.from(points), lens);
  const thetaBins = votes.length / rhoBins;
  let best = 0;
  for (let i = 1; i < votes.length; i++) if ((votes[i] as number) > (votes[best] as number)) best = i;
  // θ is the normal's angle from the x axis; the line runs at θ − 90°.
  return (((best % thetaBins) / thetaBins) * 180 + 90) % 180;
}

const work = await mkdtemp(join(tmpdir(), 'bench-pitch-plane-'));
try {
  const frames = await Promise.all(
    cams.map(async (p, i) => {
      const out = join(work, `frame-${i}.mp4`);
      await run(['-ss', String(values['at-s']), '-i', p, '-frames:v', '1', '-c:v', 'libx264', '-qp', '0', out]);
      return { cameraId: `c${i}`, path: out };
    }),
  );
  const rows: Record<string, unknown>[] = [];
  const pictures: string[] = [];
  for (const homographyFrom of ['overlap', 'pitch'] as const) {
    const t0 = performance.now();
    const cal = await selfCalibrate(cams, { homographyFrom, onWarning: (l) => process.stderr.write(`${l}\n`) });
    const calibrationS = (performance.now() - t0) / 1000;
    const { venue } = cal;
    const stitcher = await createStitcher(venue, {
      workDir: join(work, homographyFrom),
      encoder: 'libx264',
      quality: 12,
    });
    const pano = join(work, `${homographyFrom}.mp4`);
    await stitcher.stitch(frames, pano);
    // The frame at half size as RGB for the line pixels, and a 1920-wide picture.
    const w = Math.floor(venue.panorama.width_px / 4) * 2;
    const h = Math.floor(venue.panorama.height_px / 4) * 2;
    const rgbPath = join(work, `${homographyFrom}.rgb`);
    await run(['-i', pano, '-frames:v', '1', '-vf', `scale=${w}:${h}`, '-f', 'rawvideo', '-pix_fmt', 'rgb24', rgbPath]);
    const picture = join(work, `${homographyFrom}.png`);
    await run(['-i', pano, '-frames:v', '1', '-vf', 'scale=1920:-2', picture]);
    pictures.push(picture);
    const points = linePixels(new Uint8Array(await readFile(rgbPath)), w, h);
    const seam = venue.panorama.seam_x_px ?? [];
    const seamX = (seam.length ? [...seam].sort((a, b) => a - b)[seam.length >> 1]! : venue.panorama.width_px / 2) / 2;
    const side = (from: number, to: number) => {
      const out: number[] = [];
      for (let i = 0; i < points.length; i += 2) {
        const x = points[i] as number;
        const y = points[i + 1] as number;
        if (x >= from && x < to && y > 0.4 * h) out.push(x, y);
      }
      return out;
    };
    const left = dominantLineDeg(side(seamX - 0.25 * w, seamX - 0.02 * w), w, h);
    const right = dominantLineDeg(side(seamX + 0.02 * w, seamX + 0.25 * w), w, h);
    let kink = Math.abs(left - right);
    kink = Math.min(kink, 180 - kink);
    const ys = cal.inlierMatches.map((m) => m.a[1]).sort((a, b) => a - b);
    const q = (p: number) => Math.round(ys[Math.floor(p * (ys.length - 1))] ?? Number.NaN);
    const row = {
      homography_from: homographyFrom,
      calibration_s: calibrationS,
      lambda: cal.lenses[0]?.lambda,
      inliers: venue.quality?.inliers,
      inlier_rows_a_px: { min: q(0), p50: q(0.5), max: q(1) },
      seam_error_homography_px: cal.seamAlignment?.seamErrorBeforePx,
      seam_error_aligned_px: { mean: venue.quality?.seam_error_mean_px, p95: venue.quality?.seam_error_p95_px },
      seam_warp_px: cal.seamAlignment?.shiftPx,
      near_touchline_deg: { left, right, kink },
      panorama: `${venue.panorama.width_px}x${venue.panorama.height_px}`,
      pixel_density: venue.quality?.pixel_density,
      unseen_fraction: venue.quality?.unseen_fraction,
      crop_method: cal.crop?.method,
    };
    process.stderr.write(`${JSON.stringify(row)}\n`);
    rows.push(row);
  }
  await run([
    '-i',
    pictures[0]!,
    '-i',
    pictures[1]!,
    '-filter_complex',
    '[0:v][1:v]vstack=inputs=2',
    '-q:v',
    '3',
    'docs/stitch-tsukuba-pitch-plane.jpg',
  ]);
  const result = { date: new Date().toISOString(), host_load_1min: loadavg()[0], at_s: Number(values['at-s']), rows };
  await writeFile('bench/results/edge-pitch-plane.json', `${JSON.stringify(result, null, 2)}\n`);
} finally {
  await rm(work, { recursive: true, force: true });
}
