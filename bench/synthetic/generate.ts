/**
 * Benchmark: synthetic match generation speed (20 s × 3 cameras × 1280×720 at
 * 25 fps by default), against a baseline measured in the same run: three
 * ffmpeg processes in parallel encoding the same number of frames of
 * ffmpeg's own `testsrc2` pattern with the same x264 settings (pure encode
 * cost, no rendering, no pipes). The ratio tells what the simulation,
 * rendering and piping add on top of encoding.
 *
 * Run: node bench/synthetic/generate.ts [--duration S] [--repeat N]
 * Writes bench/results/synth-match.json.
 */
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { cpus, tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { resolveFfmpegPath } from '../../shared/src/media/index.ts';
import { spawnChild } from '../../shared/src/process/index.ts';
import { generateMatch } from '../../shared/src/synthetic/index.ts';

const { values } = parseArgs({
  options: { duration: { type: 'string', default: '20' }, repeat: { type: 'string', default: '3' } },
});
const durationS = Number(values.duration);
const repeat = Number(values.repeat);
const cameras = 3;
const widthPx = 1280;
const heightPx = 720;
const fps = 25;

async function baseline(dir: string): Promise<number> {
  const started = performance.now();
  await Promise.all(
    Array.from({ length: cameras }, (_, i) => {
      const run = spawnChild(
        resolveFfmpegPath(),
        [
          '-v',
          'error',
          '-f',
          'lavfi',
          '-i',
          `testsrc2=size=${widthPx}x${heightPx}:rate=${fps}`,
          '-t',
          String(durationS),
          '-c:v',
          'libx264',
          '-preset',
          'veryfast',
          '-crf',
          '20',
          '-g',
          String(2 * fps),
          '-pix_fmt',
          'yuv420p',
          '-threads',
          '2',
          '-y',
          join(dir, `baseline-${i}.mp4`),
        ],
        { stdout: 'ignore' },
      );
      return run.done;
    }),
  );
  return (performance.now() - started) / 1000;
}

async function generate(dir: string, panoramaVideo: boolean): Promise<number> {
  const started = performance.now();
  await generateMatch({
    outDir: join(dir, `clip-${panoramaVideo}`),
    cameras,
    durationS,
    fps,
    widthPx,
    heightPx,
    seed: 7,
    panoramaVideo,
  });
  return (performance.now() - started) / 1000;
}

const median = (xs: number[]) => {
  const s = [...xs].sort((a, b) => a - b);
  const m = Math.floor(s.length / 2);
  return s.length % 2 === 1 ? (s[m] as number) : ((s[m - 1] as number) + (s[m] as number)) / 2;
};

const dir = await mkdtemp(join(tmpdir(), 'pv-bench-synth-'));
try {
  const rows: { baselineS: number; generateS: number; generatePanoramaS: number }[] = [];
  for (let r = 0; r < repeat; r++) {
    rows.push({
      baselineS: await baseline(dir),
      generateS: await generate(dir, false),
      generatePanoramaS: await generate(dir, true),
    });
  }
  const baselineS = median(rows.map((r) => r.baselineS));
  const generateS = median(rows.map((r) => r.generateS));
  const generatePanoramaS = median(rows.map((r) => r.generatePanoramaS));
  const result = {
    name: 'synth-match',
    host: { cpus: cpus().length, model: cpus()[0]?.model },
    clip: { cameras, widthPx, heightPx, fps, durationS, frames: durationS * fps },
    runs: rows,
    median: {
      baseline_encode_only_s: baselineS,
      generate_s: generateS,
      generate_with_panorama_s: generatePanoramaS,
      generate_real_time_factor: durationS / generateS,
      generate_vs_baseline_ratio: generateS / baselineS,
      generate_with_panorama_vs_baseline_ratio: generatePanoramaS / baselineS,
    },
    measured_at: new Date().toISOString(),
  };
  await mkdir(join(import.meta.dirname, '..', 'results'), { recursive: true });
  await writeFile(
    join(import.meta.dirname, '..', 'results', 'synth-match.json'),
    `${JSON.stringify(result, null, 2)}\n`,
  );
  console.log(JSON.stringify(result.median, null, 2));
} finally {
  await rm(dir, { recursive: true, force: true });
}
