/**
 * Camera-motion compensation (the detect stage measures the camera's motion between analysed frames,
 * the tracker moves its predictions with it) on real footage, as `./polyvision demo` runs it, with
 * the compensation on (shipped) and off (`--camera-motion off`, the baseline) in the same run:
 *
 * - **panning**: a 1920×1080 camera panning and tilting over `tsukuba-left.mp4` (3072×1728), made
 *   with ffmpeg's crop at whole-pixel positions `x = 576 + 500·sin(2πn/125)`, `y = 324 + 150·sin(2πn/175)`
 *   (n: source frame; up to 25 px per source frame, 63 px between analysed frames at 10 fps — a fast
 *   broadcast pan); ground truth: the tsukuba-left silhouette labels moved by the same positions (a
 *   box less than half inside the window becomes an ignore region);
 * - **still window**: the same 1920×1080 window held at its mean position (576, 324) — the control: the
 *   same picture size and people's scale as the panning one (the detector's tiling follows the frame
 *   size), without the pan;
 * - **fixed**: `tsukuba-left.mp4` itself (a fixed rig: nothing to compensate, the cost of finding that out).
 *
 * Per run: HOTA, DetA, AssA, MOTA, IDF1, IDSW on the labelled frames (`eval tracks --gt-frames-only`)
 * and what the detect stage found (`cameraMotion` counts); the estimate against the panning window's
 * true positions (px, translation per analysed frame pair); then the cost: the detect stage's CPU time
 * with and without the measurement, alternating (off, on, on, off) in this process.
 *
 *   node bench/workers/camera-motion.ts [--gt bench/label/tsukuba-left/gt-silhouette.mot.txt]
 *
 * Needs ../shared/footage/tsukuba-left.mp4. Writes bench/results/camera-motion.json.
 */
import { spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import { mkdir, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { detectEnvSchema, detectOptionsFromEnv } from '../../core/src/workers/detect/handler.ts';
import {
  CameraMotionEstimator,
  Detector,
  probeVideo,
  readDetectionsFile,
  readVideoFrames,
  runDetect,
} from '../../core/src/workers/detect/index.ts';
import { loadConfig, resolveFfmpegPath } from '../../shared/src/index.ts';

const repoRoot = resolve(dirname(fileURLToPath(import.meta.url)), '..', '..');
const CLI = join(repoRoot, 'deploy', 'src', 'cli', 'main.ts');
const SOURCE = resolve(repoRoot, '..', 'shared', 'footage', 'tsukuba-left.mp4');
const { values } = parseArgs({
  options: { gt: { type: 'string', default: 'bench/label/tsukuba-left/gt-silhouette.mot.txt' } },
});
if (!existsSync(SOURCE)) {
  console.error(`skipped: ${SOURCE} is missing`);
  process.exit(0);
}

const WINDOW = { width: 1920, height: 1080 };
/** A window's top-left corner per source frame n (px) and the same as ffmpeg expressions. */
interface Window {
  x: (n: number) => number;
  y: (n: number) => number;
  expression: { x: string; y: string };
}
const PAN: Window = {
  x: (n: number) => Math.floor(576 + 500 * Math.sin((2 * Math.PI * n) / 125)),
  y: (n: number) => Math.floor(324 + 150 * Math.sin((2 * Math.PI * n) / 175)),
  expression: { x: 'floor(576+500*sin(2*PI*n/125))', y: 'floor(324+150*sin(2*PI*n/175))' },
};
const STILL: Window = { x: () => 576, y: () => 324, expression: { x: '576', y: '324' } };

function run(args: string[]): Promise<{ code: number | null; output: string }> {
  return new Promise((done) => {
    const child = spawn(process.execPath, [CLI, ...args], { cwd: repoRoot, stdio: ['ignore', 'pipe', 'pipe'] });
    let output = '';
    child.stdout.on('data', (b: Buffer) => (output += b.toString()));
    child.stderr.on('data', (b: Buffer) => (output += b.toString()));
    child.once('exit', (code) => done({ code, output }));
  });
}

/** The ground truth seen through a window (MOT rows; boxes under half inside → ignore rows). */
function windowGroundTruth(text: string, window: Window): string {
  const rows: string[] = [];
  for (const line of text.split('\n')) {
    const f = line.split(',');
    if (f.length < 9) continue;
    const n = Number(f[0]) - 1;
    const [left, top, w, h] = [Number(f[2]) - window.x(n), Number(f[3]) - window.y(n), Number(f[4]), Number(f[5])];
    const x1 = Math.max(0, left);
    const y1 = Math.max(0, top);
    const x2 = Math.min(WINDOW.width, left + w);
    const y2 = Math.min(WINDOW.height, top + h);
    if (x2 <= x1 || y2 <= y1) continue;
    const inside = ((x2 - x1) * (y2 - y1)) / (w * h);
    const ignore = f[6] === '0' || inside < 0.5;
    const box = [x1, y1, x2 - x1, y2 - y1].map((v) => Math.round(v * 10) / 10);
    rows.push([f[0], ignore ? -1 : f[1], ...box, ignore ? 0 : 1, ...f.slice(7)].join(','));
  }
  return `${rows.join('\n')}\n`;
}

const work = await mkdtemp(join(tmpdir(), 'pv-camera-motion-'));
try {
  const gtPath = resolve(repoRoot, values.gt!);
  const gtText = await readFile(gtPath, 'utf8');
  /** A 1920×1080 window over the source moving as `window` says, and its ground truth. */
  const windowClip = async (tag: string, window: Window) => {
    const video = join(work, `${tag}.mp4`);
    const { x, y } = window.expression;
    await new Promise<void>((done, fail) => {
      const ffmpeg = spawn(resolveFfmpegPath(), [
        ...['-v', 'error', '-y', '-i', SOURCE],
        ...['-vf', `format=rgb24,crop=${WINDOW.width}:${WINDOW.height}:x='${x}':y='${y}':exact=1`],
        ...['-c:v', 'libx264', '-preset', 'veryfast', '-crf', '18', '-pix_fmt', 'yuv420p', video],
      ]);
      ffmpeg.once('exit', (code) => (code === 0 ? done() : fail(new Error(`ffmpeg exited ${code}`))));
    });
    const gt = join(work, `${tag}-gt.mot.txt`);
    await writeFile(gt, windowGroundTruth(gtText, window));
    return { video, gt };
  };
  const clips = [
    { name: 'panning 1920×1080 window over tsukuba-left', tag: 'pan', ...(await windowClip('pan', PAN)) },
    { name: 'still 1920×1080 window (control)', tag: 'window', ...(await windowClip('window', STILL)) },
    { name: 'tsukuba-left.mp4 (fixed rig, 3072×1728)', tag: 'fixed', video: SOURCE, gt: gtPath },
  ];
  const runs = [];
  for (const clip of clips) {
    for (const mode of ['on', 'off'] as const) {
      const matchId = `cm-${clip.tag}-${mode}`;
      const out = join(work, 'out');
      const demo = await run([
        'demo',
        '--plain',
        '--cameras',
        clip.video,
        '--match-id',
        matchId,
        '--out',
        out,
        '--camera-motion',
        mode,
      ]);
      if (demo.code !== 0) throw new Error(`demo ${matchId} failed:\n${demo.output.slice(-3000)}`);
      const evaluation = await run([
        'eval',
        'tracks',
        '--gt',
        clip.gt,
        '--pred',
        join(out, matchId, 'track', 'tracks.json'),
        '--gt-frames-only',
        '--json',
      ]);
      if (evaluation.code !== 0) throw new Error(`eval ${matchId} failed:\n${evaluation.output}`);
      const m = JSON.parse(evaluation.output) as Record<string, number>;
      const detections = await readDetectionsFile(join(out, matchId, 'detect', 'detections.jsonl'));
      const r1 = (v: number) => Math.round(v * 1000) / 10;
      runs.push({
        clip: clip.name,
        cameraMotion: mode,
        frames: m.frames,
        HOTA: r1(m.HOTA!),
        DetA: r1(m.DetA!),
        AssA: r1(m.AssA!),
        MOTA: r1(m.MOTA!),
        IDF1: r1(m.IDF1!),
        IDSW: m.IDSW,
        measured: detections.header.cameraMotion ?? null,
      });
      console.log(JSON.stringify(runs.at(-1)));
    }
  }
  // OpenCV's one-off load (the first in this process).
  const loadStarted = performance.now();
  await CameraMotionEstimator.create();
  const openCvLoadMs = Math.round(performance.now() - loadStarted);
  // The estimate against the panning window's true positions, on frames decoded as the stage decodes
  // this clip (one tile: 1280×720), at 10 fps, one estimator per 5-s segment.
  const panInfo = await probeVideo(clips[0]!.video);
  const errorsPx: number[] = [];
  let estimator = await CameraMotionEstimator.create();
  let previous = -1;
  for await (const frame of readVideoFrames(clips[0]!.video, { info: panInfo, fps: 10, width: 1280, height: 720 })) {
    if (frame.index > 0 && frame.index % 50 === 0) {
      estimator.close();
      estimator = await CameraMotionEstimator.create();
      previous = -1;
    }
    const motion = estimator.next(frame, panInfo.width, []);
    if (previous >= 0) {
      const n = frame.sourceIndex;
      const [tx, ty] = [-(PAN.x(n) - PAN.x(previous)), -(PAN.y(n) - PAN.y(previous))];
      errorsPx.push(Math.hypot((motion?.[2] ?? 0) - tx, (motion?.[5] ?? 0) - ty));
    }
    previous = frame.sourceIndex;
  }
  estimator.close();
  const estimateErrorPx = {
    pairs: errorsPx.length,
    mean: Math.round((errorsPx.reduce((a, b) => a + b, 0) / errorsPx.length) * 100) / 100,
    max: Math.round(Math.max(...errorsPx) * 100) / 100,
  };
  console.log(JSON.stringify({ estimateErrorPx }));
  // The cost: the detect stage (the shipped detector, 10 analysed frames per second, the whole clip in
  // one call) with and without measuring the camera motion, alternating, in this process — the demo's
  // step times are too noisy to tell (its two segments' tasks share a worker, the first run of a clip
  // pays for reading it).
  const detector = await Detector.open(await detectOptionsFromEnv(loadConfig(detectEnvSchema, {})));
  const cost = [];
  try {
    for (const clip of clips) {
      const cpuMs: Record<'on' | 'off', number[]> = { on: [], off: [] };
      for (const mode of ['off', 'on', 'on', 'off'] as const) {
        const started = process.cpuUsage();
        await runDetect({
          inputPath: clip.video,
          outputPath: join(work, 'cost.jsonl'),
          detector,
          analysisFps: 10,
          cameraMotion: mode === 'on',
        });
        const used = process.cpuUsage(started);
        cpuMs[mode].push((used.user + used.system) / 1000);
      }
      const mean = (v: number[]) => v.reduce((x, y) => x + y, 0) / v.length;
      cost.push({
        clip: clip.name,
        detectCpuMsOff: Math.round(mean(cpuMs.off)),
        detectCpuMsOn: Math.round(mean(cpuMs.on)),
        ratio: Math.round((mean(cpuMs.on) / mean(cpuMs.off)) * 1000) / 1000,
      });
      console.log(JSON.stringify(cost.at(-1)));
    }
  } finally {
    await detector.close();
  }
  await mkdir(join(repoRoot, 'bench', 'results'), { recursive: true });
  await writeFile(
    join(repoRoot, 'bench', 'results', 'camera-motion.json'),
    `${JSON.stringify({ measured_at: new Date().toISOString(), gt: values.gt, runs, estimateErrorPx, openCvLoadMs, detectCost: cost }, null, 2)}\n`,
  );
} finally {
  await rm(work, { recursive: true, force: true });
}
