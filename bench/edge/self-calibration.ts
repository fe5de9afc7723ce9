/**
 * Self-calibration on the real two-camera rig (../shared/footage/tsukuba-*.mp4)
 * and on a synthetic two-camera rig against its ground truth, plus stitching
 * time on the real pair against the decode + stack + encode floor in the same run.
 *
 * Real pair: calibration time, seam error (panorama distance between the two
 * sides of every inlier feature match, through the stitcher's own mapping),
 * dominant-line straightness before/after undistortion, time offset; then the
 * full 10 s stitched with the shipped defaults (libx264 veryfast CRF 20) against
 * `hstack` of the two decoded cameras scaled to the panorama's size, same encoder.
 * Synthetic: 2 × 1280×720 cameras sharing an optical centre; the estimated
 * camera-B → camera-A homography against the truth (mean / p95 transfer error
 * over camera B's pixels that camera A sees).
 *
 * Usage: node bench/edge/self-calibration.ts [--skip-stitch] [--skip-real (keep the real pair's figures of the last run)]
 *   [--out FILE]
 * Writes bench/results/edge-self-calibration.json (or FILE) and docs/stitch-tsukuba.png.
 */
import { existsSync } from 'node:fs';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { createStitcher, distortDivision, selfCalibrate, undistortDivision } from '../../edge/src/index.ts';
import { generateMatch, mat3FromRows, mat3Invert, resolveFfmpegPath, spawnChild } from '../../shared/src/index.ts';

const { values } = parseArgs({
  options: { 'skip-stitch': { type: 'boolean' }, 'skip-real': { type: 'boolean' }, out: { type: 'string' } },
});
const outPath = values.out ?? 'bench/results/edge-self-calibration.json';
const ffmpeg = resolveFfmpegPath();
const left = '../shared/footage/tsukuba-left.mp4';
const right = '../shared/footage/tsukuba-right.mp4';
const work = await mkdtemp(join(tmpdir(), 'bench-selfcal-'));
const result: Record<string, unknown> = {
  date: new Date().toISOString(),
  host_load_1min: (await import('node:os')).loadavg()[0],
};

async function timeFfmpeg(args: string[]): Promise<number> {
  const started = performance.now();
  await spawnChild(ffmpeg, args, { stdout: 'ignore' }).done;
  return (performance.now() - started) / 1000;
}

function apply(h: number[], x: number, y: number): [number, number] {
  const w = (h[6] as number) * x + (h[7] as number) * y + (h[8] as number);
  return [
    ((h[0] as number) * x + (h[1] as number) * y + (h[2] as number)) / w,
    ((h[3] as number) * x + (h[4] as number) * y + (h[5] as number)) / w,
  ];
}

try {
  if (values['skip-real']) {
    // Keep the real pair's figures of an earlier run.
    const previous = JSON.parse(await (await import('node:fs/promises')).readFile(outPath, 'utf8'));
    result.real = previous.real;
    result.real_date = previous.date;
  } else if (existsSync(left) && existsSync(right)) {
    const started = performance.now();
    const cal = await selfCalibrate([left, right], { onStep: (s) => process.stderr.write(`real: ${s}\n`) });
    const calibrationS = (performance.now() - started) / 1000;
    const q = cal.venue.quality;
    const real: Record<string, unknown> = {
      calibration_s: calibrationS,
      panorama: `${cal.venue.panorama.width_px}x${cal.venue.panorama.height_px}`,
      // The crop to what the cameras see: size, unseen-pixel fraction and pitch-line pixels kept, before → after.
      crop: cal.crop && {
        panorama_before: `${cal.crop.before.widthPx}x${cal.crop.before.heightPx}`,
        rect_px: cal.crop.rect,
        unseen_fraction_before: cal.crop.unseenFractionBefore,
        unseen_fraction_after: cal.crop.unseenFraction,
        pitch_line_pixels_kept: cal.crop.pitchKeptFraction,
        filled: cal.crop.filled,
      },
      quality: q,
      lenses: cal.lenses,
      distortion: cal.venue.cameras.map((c) => ({ id: c.id, ...c.distortion, division: c.division_model })),
      color_gains: cal.venue.cameras.map((c) => c.color_gains),
    };
    await writeFile(join(work, 'venue.json'), JSON.stringify(cal.venue));
    if (!values['skip-stitch']) {
      const prepStart = performance.now();
      const stitcher = await createStitcher(cal.venue, { workDir: join(work, 'maps'), encoder: 'libx264' });
      real.maps_s = (performance.now() - prepStart) / 1000;
      real.maps_coverage = stitcher.coverage;
      const s0 = performance.now();
      await stitcher.stitch(
        [
          { cameraId: 'a', path: left },
          { cameraId: 'b', path: right },
        ],
        join(work, 'pano.mp4'),
      );
      real.stitch_s = (performance.now() - s0) / 1000;
      const size = `${stitcher.widthPx}:${stitcher.heightPx}`;
      real.floor_s = await timeFfmpeg([
        '-hide_banner',
        '-nostdin',
        '-loglevel',
        'error',
        '-y',
        '-i',
        left,
        '-i',
        right,
        '-filter_complex',
        `[0:v][1:v]hstack=inputs=2,scale=${size}[out]`,
        '-map',
        '[out]',
        '-an',
        '-c:v',
        'libx264',
        '-preset',
        'veryfast',
        '-crf',
        '20',
        '-g',
        '50',
        '-pix_fmt',
        'yuv420p',
        '-f',
        'mp4',
        join(work, 'floor.mp4'),
      ]);
      real.stitch_over_floor = (real.stitch_s as number) / (real.floor_s as number);
      await timeFfmpeg([
        '-hide_banner',
        '-nostdin',
        '-loglevel',
        'error',
        '-y',
        '-ss',
        '4',
        '-i',
        join(work, 'pano.mp4'),
        '-frames:v',
        '1',
        '-vf',
        'scale=1920:-2',
        'docs/stitch-tsukuba.png',
      ]);
    }
    result.real = real;
    process.stderr.write(`${JSON.stringify(real, null, 1)}\n`);
  } else {
    result.real = `skipped: ${left} is missing`;
  }

  // Synthetic rig with ground truth.
  const clip = join(work, 'synthetic');
  await generateMatch({ outDir: clip, cameras: 2, durationS: 3, widthPx: 1280, heightPx: 720, seed: 7 });
  const truth = JSON.parse(await (await import('node:fs/promises')).readFile(join(clip, 'venue.json'), 'utf8'));
  const s0 = performance.now();
  const cal = await selfCalibrate([join(clip, 'camera-0.mp4'), join(clip, 'camera-1.mp4')]);
  const synthS = (performance.now() - s0) / 1000;
  // Camera B's recorded pixels → camera A's recorded pixels: estimated (undistort, B → A, distort) against the truth.
  const est = [
    mat3Invert(mat3FromRows(cal.venue.cameras[0]!.image_to_panorama)),
    mat3FromRows(cal.venue.cameras[1]!.image_to_panorama),
  ];
  const tru = [
    mat3Invert(mat3FromRows(truth.cameras[0].image_to_panorama)),
    mat3FromRows(truth.cameras[1].image_to_panorama),
  ];
  const dm = cal.venue.cameras[0]!.division_model!;
  const lens = { lambda: dm.lambda, cx: dm.center_px[0], cy: dm.center_px[1], normPx: dm.norm_px };
  const errors: number[] = [];
  for (let v = 0; v < 720; v += 8) {
    for (let u = 0; u < 1280; u += 8) {
      const [tx, ty] = apply(tru[0] as number[], ...apply(tru[1] as number[], u, v));
      if (!(tx >= 0 && tx < 1280 && ty >= 0 && ty < 720)) continue;
      const [ux, uy] = undistortDivision(lens, u, v);
      const [mx, my] = apply(est[0] as number[], ...apply(est[1] as number[], ux, uy));
      const [ex, ey] = distortDivision(lens, mx, my);
      errors.push(Math.hypot(ex - tx, ey - ty));
    }
  }
  errors.sort((a, b) => a - b);
  result.synthetic = {
    cameras: '2 × 1280×720 (shared/src/synthetic, seed 7, 3 s)',
    calibration_s: synthS,
    division_lambda: cal.venue.cameras[0]!.division_model?.lambda,
    quality: cal.venue.quality,
    homography_b_to_a_error_px: {
      samples: errors.length,
      mean: errors.reduce((a, b) => a + b, 0) / Math.max(1, errors.length),
      p95: errors[Math.floor(0.95 * (errors.length - 1))],
      max: errors.at(-1),
    },
  };
  process.stderr.write(`${JSON.stringify(result.synthetic, null, 1)}\n`);
  await writeFile(outPath, `${JSON.stringify(result, null, 2)}\n`);
} finally {
  await rm(work, { recursive: true, force: true });
}
